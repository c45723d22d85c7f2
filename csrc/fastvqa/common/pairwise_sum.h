// SPDX-License-Identifier: Apache-2.0
// NumPy's pairwise summation, reproduced to the bit.
//
// A benchmark's official evaluator that averages with np.mean / np.sum adds
// a contiguous float64 array in NumPy's pairwise order (blocks of at most 128
// values summed with eight running partial sums, halves of larger ranges
// summed recursively, then added to the reduction's identity 0.0). Rounding
// depends on that order, so a compiled metric that must agree with such an
// evaluator to the last bit sums in the same order. The Python side checks
// once per process that this reproduces the installed NumPy's np.add.reduce
// and falls back to NumPy when it does not (fastvqa.metrics.grounding).
//
// The values are read in order from one or two arrays with a shared skip
// mask, so a masked sum costs one pass and no compacted copy: it is the
// pairwise sum of the values whose skip flag is 0, as if they had been
// compacted first.
#pragma once

#include <cstdint>

namespace fastvqa {

class MaskedPairwiseSum2 {
 public:
  // x, y: n values each; skip: n flags (nullptr: none skipped).
  MaskedPairwiseSum2(const double* x, const double* y, const uint8_t* skip)
      : x_(x), y_(y), skip_(skip) {}

  // Sums of the next `count` kept values of x and of y, in NumPy's order for
  // a reduction over exactly `count` values.
  void sum(int64_t count, double* sx, double* sy) {
    double a, b;
    pairwise(count, &a, &b);
    *sx = 0.0 + a;  // the reduction starts from add's identity
    *sy = 0.0 + b;
  }

 private:
  static constexpr int64_t kBlock = 128;  // NumPy's PW_BLOCKSIZE

  // The next m kept values into bx_/by_ (m <= kBlock); the loop branches only
  // on its own end, not on each flag.
  void gather(int64_t m) {
    int64_t k = 0;
    if (skip_ == nullptr) {
      for (; k < m; ++k, ++pos_) {
        bx_[k] = x_[pos_];
        by_[k] = y_[pos_];
      }
      return;
    }
    while (k < m) {
      bx_[k] = x_[pos_];
      by_[k] = y_[pos_];
      k += skip_[pos_] == 0;
      ++pos_;
    }
  }

  static double leaf(const double* v, int64_t n) {
    if (n < 8) {
      double r = -0.0;
      for (int64_t i = 0; i < n; ++i) r += v[i];
      return r;
    }
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = v[j];
    int64_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += v[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += v[i];
    return res;
  }

  void pairwise(int64_t n, double* sx, double* sy) {
    if (n <= kBlock) {
      gather(n);
      *sx = leaf(bx_, n);
      *sy = leaf(by_, n);
      return;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    double ax, ay, bx, by;
    pairwise(n2, &ax, &ay);  // the first half is read first
    pairwise(n - n2, &bx, &by);
    *sx = ax + bx;
    *sy = ay + by;
  }

  const double* x_;
  const double* y_;
  const uint8_t* skip_;
  int64_t pos_ = 0;
  double bx_[kBlock], by_[kBlock];
};

}  // namespace fastvqa
