// The F(2x2, 3x3) transforms and a block's steps (winograd_f32.h) over a lane struct S, compiled
// once per CPU path (winograd_f32.cpp: scalar; winograd_avx2.cpp, winograd_avx512.cpp under their
// targets). S: V (S::W floats), M (a mask of a vector's first lanes: S::mask(n)), load / store
// under a mask, add, sub, set1, clamp (a NaN value stays NaN).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/gemm.h"
#include "kernels/compute/winograd_epilogue.h"
#include "kernels/compute/winograd_f32.h"

namespace etnp {
namespace winograd_impl {

// V = B^T d B of one 4x4 patch, channels [0, C): d[i * 4 + j] points at patch pixel (i, j)'s
// channels; V[xi] is written at v + xi * stride. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
template <class S>
inline void input_tile(const float* const* d, float* v, int64_t stride, int64_t C) {
  using V = typename S::V;
  for (int64_t c = 0; c < C; c += S::W) {
    const typename S::M m = S::mask(C - c);
    V e[16];
    for (int j = 0; j < 4; j++) {  // columns: B^T applied down each column of the patch
      const V d0 = S::load(d[j] + c, m), d1 = S::load(d[4 + j] + c, m), d2 = S::load(d[8 + j] + c, m),
              d3 = S::load(d[12 + j] + c, m);
      e[j] = S::sub(d0, d2), e[4 + j] = S::add(d1, d2), e[8 + j] = S::sub(d2, d1), e[12 + j] = S::sub(d1, d3);
    }
    for (int i = 0; i < 4; i++) {  // then along each row (times B)
      const V* r = e + 4 * i;
      float* o = v + 4 * i * stride + c;
      S::store(o, S::sub(r[0], r[2]), m);
      S::store(o + stride, S::add(r[1], r[2]), m);
      S::store(o + 2 * stride, S::sub(r[2], r[1]), m);
      S::store(o + 3 * stride, S::sub(r[1], r[3]), m);
    }
  }
}

// Y = A^T m A of one tile, channels [0, OC), then the epilogue: m[xi] at mt + xi * stride;
// y[p] (p = 2 * row + column) the output pixel's channels, null outside the image; res[p] its
// residual row (null: none). A^T = [1 1 1 0; 0 1 -1 -1].
template <class S>
inline void output_tile(const float* mt, int64_t stride, int64_t OC, float* const* y,
                                           const float* const* res, const float* bias, const GemmEpilogue& ep) {
  using V = typename S::V;
  for (int64_t c = 0; c < OC; c += S::W) {
    const typename S::M m = S::mask(OC - c);
    V a[4], b[4];
    for (int j = 0; j < 4; j++) {  // A^T down each column
      const V m0 = S::load(mt + j * stride + c, m), m1 = S::load(mt + (4 + j) * stride + c, m),
              m2 = S::load(mt + (8 + j) * stride + c, m), m3 = S::load(mt + (12 + j) * stride + c, m);
      a[j] = S::add(S::add(m0, m1), m2);
      b[j] = S::sub(S::sub(m1, m2), m3);
    }
    const V out[4] = {S::add(S::add(a[0], a[1]), a[2]), S::sub(S::sub(a[1], a[2]), a[3]),
                      S::add(S::add(b[0], b[1]), b[2]), S::sub(S::sub(b[1], b[2]), b[3])};
    winograd_store_outputs<S, 4>(out, y, res, bias, ep, c, m);
  }
}

// The tiles of bands [tr0, tr1) (over all images: tr = image * bands + band) of the convolution,
// on this thread: input transform into v, 16 GEMMs into mb, output transform into Y. With
// dilation d a tile's 2x2 outputs are d apart (its 4x4 patch's pixels too): a band of 2d output
// rows holds d rows of tiles (offsets rh < d), each tile row d interleaved sets of tiles
// across (offsets rw < d) in column bands of 2d; d = 1: a band is one row of 2x2 tiles.
template <class S>
inline void tile_rows(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                      const GemmEpilogue& ep, int64_t tr0, int64_t tr1, float* v, float* mb, const float* zeros) {
  const int64_t d = g.dilation, TH = winograd_bands(g.OH, d), TW = winograd_bands(g.OW, d), C = g.C, OC = g.OC;
  const int64_t per_band = d * d * TW, T = (tr1 - tr0) * per_band;  // tiles in a band, in the block
  // calls f(tile index in the block, image, first output row, first output column) per tile
  auto tiles = [&](auto f) {
    int64_t t = 0;
    for (int64_t tr = tr0; tr < tr1; tr++)
      for (int64_t rh = 0; rh < d; rh++)
        for (int64_t cb = 0; cb < TW; cb++)
          for (int64_t rw = 0; rw < d; rw++, t++) f(t, tr / TH, (tr % TH) * 2 * d + rh, cb * 2 * d + rw);
  };
  tiles([&](int64_t t, int64_t n, int64_t oh0, int64_t ow0) {
    const float* p[16];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        const int64_t ih = oh0 - g.pad_top + i * d, iw = ow0 - g.pad_left + j * d;
        p[i * 4 + j] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W ? X + ((n * g.H + ih) * g.W + iw) * C : zeros;
      }
    input_tile<S>(p, v + t * C, T * C, C);
  });
  for (int xi = 0; xi < 16; xi++) sgemm_packed(nullptr, T, v + xi * T * C, C, 1, U[(size_t)xi], mb + xi * T * OC, OC);
  tiles([&](int64_t t, int64_t n, int64_t oh0, int64_t ow0) {
    float* y[4];
    const float* r[4];
    for (int q = 0; q < 4; q++) {
      const int64_t oh = oh0 + (q / 2) * d, ow = ow0 + (q % 2) * d, pix = (n * g.OH + oh) * g.OW + ow;
      const bool in = oh < g.OH && ow < g.OW;
      y[q] = in ? Y + pix * OC : nullptr;
      r[q] = in && ep.residual ? ep.residual + pix * ep.ldr : nullptr;
    }
    output_tile<S>(mb + t * OC, T * OC, OC, y, r, ep.bias_col, ep);
  });
}

}  // namespace winograd_impl

// tile_rows<S> per CPU path (the x86 ones defined in their own files)
using WinogradTileRows = void (*)(const WinogradGeom&, const float*, const std::vector<PackedB>&, float*,
                                  const GemmEpilogue&, int64_t, int64_t, float*, float*, const float*);
#if defined(__x86_64__)
void winograd_tile_rows_avx512(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                               const GemmEpilogue& ep, int64_t tr0, int64_t tr1, float* v, float* mb,
                               const float* zeros);
void winograd_tile_rows_avx2(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                             const GemmEpilogue& ep, int64_t tr0, int64_t tr1, float* v, float* mb, const float* zeros);
#endif

}  // namespace etnp
