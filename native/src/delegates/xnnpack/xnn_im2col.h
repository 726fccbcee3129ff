// im2col of a convolution node over an NHWC input, for the float path (xnn_conv.cpp) and the
// static-int8 byte path (xnn_static_q8.cpp): output pixels [m_begin, m_end) of group gi, each a
// row of KH * KW * ICg elements at dst (rows `row_stride` apart), taps outside the input `pad`.
// With one group and no horizontal dilation a kernel row's taps are KW * C adjacent elements.
// Also the other ways the convolution paths walk output pixels: per-tap pointer tables, window
// addresses in a padded input, and how pixels are cut into blocks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "delegates/xnnpack/xnn_graph.h"
#include "kernels/kernel_util.h"
#include "util/copy_short.h"

namespace etnp::xnn {

// The convolution paths unfold blocks of output pixels into per-thread buffers and multiply each
// block right away; with fewer tasks (blocks x groups) than four a thread - a deep layer's small
// map - they unfold every pixel into one buffer of `bytes` (up to 16 MiB) and split one GEMM by
// columns instead.
inline bool unfold_whole(const KernelContext& ctx, int64_t tasks, int64_t bytes) {
  const int nt = ctx.pool ? ctx.pool->num_threads() : 1;
  return nt > 1 && tasks < 4 * nt && bytes <= (int64_t(16) << 20);
}

// Rows a block when M output pixels are unfolded in blocks of at most max_rows (a multiple of
// unit): the same number of blocks, evened out (256 pixels in blocks of <= 240: 144 + 112, not
// 240 + 16, whose tasks the threads could not share evenly). With `threads` > 1 the number of
// blocks is rounded up to a multiple of it where blocks of `unit` rows allow (256 rows in blocks
// of <= 96 for 2 threads: 4 blocks of <= 72, not 3 - one thread's 2 blocks against the other's 1).
inline int64_t balanced_rows(int64_t M, int64_t max_rows, int64_t unit, int64_t threads = 1) {
  int64_t blocks = std::max<int64_t>(1, (M + max_rows - 1) / max_rows);
  if (threads > 1) {
    const int64_t shared = (blocks + threads - 1) / threads * threads;
    if (M >= shared * unit) blocks = shared;
  }
  const int64_t even = (M + blocks - 1) / blocks;
  return std::max<int64_t>(unit, (even + unit - 1) / unit * unit);
}

// KW taps of BYTES each, `step` elements apart in the input, to consecutive places at dst.
template <int BYTES, typename T>
inline void taps_fixed(T* dst, const T* src, int64_t KW, int64_t step, int64_t ICg) {
  for (int64_t j = 0; j < KW; j++) std::memcpy(dst + j * ICg, src + j * step, BYTES);
}

// Output pixel m's image, row and column, stepped pixel by pixel (no divisions after the first).
struct PixelCursor {
  int64_t OH, OW, bn, oh, ow;
  PixelCursor(int64_t m, int64_t OH_, int64_t OW_)
      : OH(OH_), OW(OW_), bn(m / (OH_ * OW_)), oh((m / OW_) % OH_), ow(m % OW_) {}
  void next() {
    if (++ow == OW) {
      ow = 0;
      if (++oh == OH) { oh = 0; bn++; }
    }
  }
};

// For output pixels [m_begin, m_end) of a convolution over an input padded to Hp x Wp (every
// window inside it: the float indirect paths), the address of each pixel's top-left tap plus
// `offset`: rows[m - m_begin].
inline void padded_window_rows(const Node& n, const float* base, int64_t Hp, int64_t Wp, int64_t C, int64_t OH,
                               int64_t OW, int64_t m_begin, int64_t m_end, int64_t offset, const float** rows) {
  PixelCursor px(m_begin, OH, OW);
  for (int64_t m = m_begin; m < m_end; m++, px.next())
    rows[m - m_begin] = base + ((px.bn * Hp + px.oh * n.sh) * Wp + px.ow * n.sw) * C + offset;
}

// For output pixels [m_begin, m_end) (of group 0; a group's channels are ICg * gi further on),
// per tap (kernel row-major) the address of its input pixel's channels, or `pad` (at least C
// elements of 0) where the tap falls in the padding: ptrs[(m - m_begin) * KH * KW + tap].
template <typename T>
void conv_tap_pointers(const Node& n, const T* X, int64_t H, int64_t W, int64_t C, int64_t OH, int64_t OW,
                       int64_t m_begin, int64_t m_end, const T* pad, const T** ptrs) {
  const int64_t KH = n.kh, KW = n.kw, taps = KH * KW;
  // a pixel whose window lies inside the input: its top-left tap's address + each tap's offset
  int64_t koff[64];
  const bool offsets = taps <= 64;
  if (offsets)
    for (int64_t i = 0; i < KH; i++)
      for (int64_t j = 0; j < KW; j++) koff[i * KW + j] = (i * n.dh * W + j * n.dw) * C;
  const int64_t span_h = (KH - 1) * n.dh, span_w = (KW - 1) * n.dw;
  PixelCursor px(m_begin, OH, OW);
  for (int64_t m = m_begin; m < m_end; m++, px.next()) {
    const int64_t bn = px.bn;
    const T** p = ptrs + (m - m_begin) * taps;
    const int64_t ih0 = px.oh * n.sh - n.pad_top, iw0 = px.ow * n.sw - n.pad_left;
    if (offsets && ih0 >= 0 && ih0 + span_h < H && iw0 >= 0 && iw0 + span_w < W) {
      const T* base = X + ((bn * H + ih0) * W + iw0) * C;
      for (int64_t t = 0; t < taps; t++) p[t] = base + koff[t];
      continue;
    }
    for (int64_t i = 0; i < KH; i++) {
      const int64_t ih = ih0 + i * n.dh;
      const bool row_in = ih >= 0 && ih < H;
      for (int64_t j = 0; j < KW; j++) {
        const int64_t iw = iw0 + j * n.dw;
        p[i * KW + j] = row_in && iw >= 0 && iw < W ? X + ((bn * H + ih) * W + iw) * C : pad;
      }
    }
  }
}

template <typename T>
void im2col_rows(const Node& n, const T* X, int64_t H, int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t gi,
                 int64_t m_begin, int64_t m_end, T* dst_rows, int64_t row_stride, T pad) {
  const int64_t ICg = n.group_in, KW = n.kw, run = KW * ICg;
  const bool row_runs = n.groups == 1 && n.dw == 1;
  auto copy = [](T* d, const T* src, int64_t len) { copy_short((char*)d, (const char*)src, (size_t)len * sizeof(T)); };
  PixelCursor px(m_begin, OH, OW);
  for (int64_t m = m_begin; m < m_end; m++, px.next()) {
    const int64_t bn = px.bn, oh = px.oh;
    T* row = dst_rows + (m - m_begin) * row_stride;
    const int64_t iw0 = px.ow * n.sw - n.pad_left;
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
      if (iw0 >= 0 && iw0 + (KW - 1) * n.dw < W) {  // inner taps: no bounds checks, fixed-size moves
        const T* src = src_row + iw0 * C;
        const int64_t step = n.dw * C;
        switch (ICg * (int64_t)sizeof(T)) {
          case 4: taps_fixed<4>(dst, src, KW, step, ICg); break;
          case 8: taps_fixed<8>(dst, src, KW, step, ICg); break;
          case 16: taps_fixed<16>(dst, src, KW, step, ICg); break;
          case 32: taps_fixed<32>(dst, src, KW, step, ICg); break;
          default:
            for (int64_t j = 0; j < KW; j++) copy(dst + j * ICg, src + j * step, ICg);
        }
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
