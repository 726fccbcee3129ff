// im2col of a convolution node over an NHWC input, for the float path (xnn_conv.cpp) and the
// static-int8 byte path (xnn_static_q8.cpp): output pixels [m_begin, m_end) of group gi, each a
// row of KH * KW * ICg elements at dst (rows `row_stride` apart), taps outside the input `pad`.
// With one group and no horizontal dilation a kernel row's taps are KW * C adjacent elements.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "delegates/xnnpack/xnn_graph.h"
#include "kernels/kernel_util.h"

namespace etnp::xnn {

// The convolution paths unfold blocks of output pixels into per-thread buffers and multiply each
// block right away; with fewer tasks (blocks x groups) than four a thread - a deep layer's small
// map - they unfold every pixel into one buffer of `bytes` (up to 16 MiB) and split one GEMM by
// columns instead.
inline bool unfold_whole(const KernelContext& ctx, int64_t tasks, int64_t bytes) {
  const int nt = ctx.pool ? ctx.pool->num_threads() : 1;
  return nt > 1 && tasks < 4 * nt && bytes <= (int64_t(16) << 20);
}

template <typename T>
void im2col_rows(const Node& n, const T* X, int64_t H, int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t gi,
                 int64_t m_begin, int64_t m_end, T* dst_rows, int64_t row_stride, T pad) {
  const int64_t ICg = n.group_in, KW = n.kw, run = KW * ICg;
  const bool row_runs = n.groups == 1 && n.dw == 1;
  auto copy = [](T* d, const T* src, int64_t len) {  // short runs: no memcpy call
    if (len >= 32) std::memcpy(d, src, (size_t)len * sizeof(T));
    else for (int64_t t = 0; t < len; t++) d[t] = src[t];
  };
  int64_t bn = m_begin / (OH * OW), oh = (m_begin / OW) % OH, ow = m_begin % OW;  // then stepped, no divisions
  for (int64_t m = m_begin; m < m_end; m++, ow++) {
    if (ow == OW) {
      ow = 0;
      if (++oh == OH) { oh = 0; bn++; }
    }
    T* row = dst_rows + (m - m_begin) * row_stride;
    const int64_t iw0 = ow * n.sw - n.pad_left;
    for (int64_t i = 0; i < (int64_t)n.kh; i++) {
      const int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
      T* dst = row + i * run;
      if (ih < 0 || ih >= H) {
        std::fill_n(dst, run, pad);
        continue;
      }
      const T* src_row = X + ((bn * H + ih) * W) * C + gi * ICg;
      if (row_runs && iw0 >= 0 && iw0 + KW <= W) {
        copy(dst, src_row + iw0 * C, run);
        continue;
      }
      for (int64_t j = 0; j < KW; j++, dst += ICg) {
        const int64_t iw = iw0 + j * n.dw;
        if (iw < 0 || iw >= W) std::fill_n(dst, ICg, pad);
        else copy(dst, src_row + iw * C, ICg);
      }
    }
  }
}

}  // namespace etnp::xnn
