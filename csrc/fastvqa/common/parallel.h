// SPDX-License-Identifier: Apache-2.0
// How fastvqa's CPU loops share out rows between OpenMP threads.
//
// Every parallel region has an `if (work >= grain)` clause, so small calls run
// on the calling thread alone (no team is woken, no barrier). Above the grain,
// rows are handed out dynamically in chunks of about kChunkWork elements:
// when one thread is descheduled (the cores are shared with other processes),
// the others take its rows instead of waiting at the closing barrier for a
// statically assigned half. Chunks keep the shared counter's cost far below
// the rows' work. Dynamic scheduling changes only which thread computes a
// row, never what is computed: outputs are identical.
#pragma once

#include <cstdint>

namespace fastvqa {

// Elements (band cells, steps) per dynamic chunk of rows.
constexpr int64_t kChunkWork = 8192;

// Rows per chunk for rows of `row_work` elements each (at least 1). An int, as
// OpenMP's schedule clause takes one.
inline int rows_per_chunk(int64_t row_work) {
  if (row_work <= 0) return 1 << 20;
  const int64_t rows = kChunkWork / row_work;
  return rows < 1 ? 1 : (rows > (1 << 20) ? (1 << 20) : static_cast<int>(rows));
}

}  // namespace fastvqa
