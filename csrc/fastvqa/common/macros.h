// SPDX-License-Identifier: Apache-2.0
// Shared macros: host/device qualifiers and the caller-error checks.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

// FASTVQA_HD marks per-element math that both the CPU loops and the CUDA
// kernels call, so the semantics exist exactly once.
#if defined(__CUDACC__)
#define FASTVQA_HD __host__ __device__ __forceinline__
#else
#define FASTVQA_HD inline
#endif

// FASTVQA_VECTOR_CLONES builds a CPU function twice, for AVX2 and for the
// portable x86-64 baseline (SSE2), and picks one at load time (GCC's
// target_clones, an ifunc): the wheels must run on any x86-64, and the
// vectorised loops gain 2x from the wider registers where AVX2 exists.
// Helpers that such a function's loops call are FASTVQA_ALWAYS_INLINE, so
// that they are compiled inside each clone (a helper called out of line
// keeps the baseline's instructions). FASTVQA_NO_VECTOR_CLONES builds the
// baseline alone (scripts/sanitize.sh does, so that the tests run it too: on
// an AVX2 machine the clones always take the AVX2 build).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__) && \
    !defined(FASTVQA_NO_VECTOR_CLONES)
#define FASTVQA_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTVQA_VECTOR_CLONES
#endif
#if defined(__GNUC__)
#define FASTVQA_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FASTVQA_ALWAYS_INLINE inline
#endif

namespace fastvqa {

// A caller mistake in a value (shape, range, offsets). Surfaces as ValueError.
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A caller mistake in a type (dtype, array kind). Surfaces as TypeError.
class TypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename Head, typename... Tail>
void append(std::ostringstream& os, const Head& head, const Tail&... tail) {
  os << head;
  append(os, tail...);
}
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  append(os, args...);
  return os.str();
}
}  // namespace detail

}  // namespace fastvqa

// Caller errors: the message names the op, the argument, what was expected and
// what was given. Never compiled out.
#define FASTVQA_CHECK(cond, ...)                                           \
  do {                                                                     \
    if (!(cond)) throw ::fastvqa::ValueError(::fastvqa::detail::concat(__VA_ARGS__)); \
  } while (0)

#define FASTVQA_CHECK_TYPE(cond, ...)                                      \
  do {                                                                     \
    if (!(cond)) throw ::fastvqa::TypeError(::fastvqa::detail::concat(__VA_ARGS__)); \
  } while (0)

// Internal invariants: a failure is a fastvqa bug, reported with file and line.
#define FASTVQA_ASSERT(cond)                                                    \
  do {                                                                          \
    if (!(cond))                                                                \
      throw std::logic_error(::fastvqa::detail::concat(                         \
          "fastvqa internal error: ", #cond, " failed at ", __FILE__, ":", __LINE__, \
          "; please report this"));                                             \
  } while (0)
