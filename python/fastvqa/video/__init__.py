# SPDX-License-Identifier: Apache-2.0
"""Video decoding at each benchmark's sampling (placeholder; the package is filled on merge)."""
