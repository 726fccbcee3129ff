// The F(3, 3) transforms of 1-D Winograd convolutions and a block's steps (winograd1d_f32.h) over a
// lane struct S (winograd_impl.h's: V, M, mask, load, store, add, sub, set1, clamp), compiled once
// per CPU path (winograd1d_f32.cpp: scalar; winograd_avx2.cpp, winograd_avx512.cpp under their
// targets). Points 0, 1, -1, 2 and infinity, the fractions moved into the filter transform:
//   B^T = [2 -1 -2 1 0; 0 2 1 -1 0; 0 -2 3 -1 0; 0 -1 0 1 0; 0 2 -1 -2 1]
//   G   = [1/2 0 0; 1/2 1/2 1/2; 1/6 -1/6 1/6; 1/6 1/3 2/3; 0 0 1]
//   A^T = [1 1 1 1 0; 0 1 -1 2 0; 0 1 1 4 1]
// y = A^T ((G g) * (B^T d)) for 5 input samples d and 3 taps g gives 3 outputs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/compute/gemm.h"
#include "kernels/compute/winograd1d_f32.h"
#include "kernels/compute/winograd_epilogue.h"

namespace etnp {
namespace winograd1d_impl {

// V = B^T d of one window of 5 samples, channels [0, C): d[i] points at sample i's channels;
// V[xi] is written at v + xi * stride.
template <class S>
inline void input_tile(const float* const* d, float* v, int64_t stride, int64_t C) {
  using V = typename S::V;
  for (int64_t c = 0; c < C; c += S::W) {
    const typename S::M m = S::mask(C - c);
    const V x0 = S::load(d[0] + c, m), x1 = S::load(d[1] + c, m), x2 = S::load(d[2] + c, m),
            x3 = S::load(d[3] + c, m), x4 = S::load(d[4] + c, m);
    const V a = S::sub(x0, x2), b = S::sub(x1, x3), t = S::sub(x2, x1), x23 = S::sub(x2, x3), x31 = S::sub(x3, x1);
    float* o = v + c;
    S::store(o, S::add(S::add(a, a), x31), m);                       // 2x0 - x1 - 2x2 + x3
    S::store(o + stride, S::add(S::add(x1, x1), x23), m);            // 2x1 + x2 - x3
    S::store(o + 2 * stride, S::add(S::add(t, t), x23), m);          // -2x1 + 3x2 - x3
    S::store(o + 3 * stride, x31, m);                                // x3 - x1
    S::store(o + 4 * stride, S::add(S::add(b, b), S::sub(x4, x2)), m);  // 2x1 - x2 - 2x3 + x4
  }
}

// y = A^T m of one tile, channels [0, OC), then the epilogue: m[xi] at mt + xi * stride; y[r]
// output r's channels (null: past the end), res[r] its residual row (null: none).
template <class S>
inline void output_tile(const float* mt, int64_t stride, int64_t OC, float* const* y, const float* const* res,
                        const float* bias, const GemmEpilogue& ep) {
  using V = typename S::V;
  for (int64_t c = 0; c < OC; c += S::W) {
    const typename S::M m = S::mask(OC - c);
    const V m0 = S::load(mt + c, m), m1 = S::load(mt + stride + c, m), m2 = S::load(mt + 2 * stride + c, m),
            m3 = S::load(mt + 3 * stride + c, m), m4 = S::load(mt + 4 * stride + c, m);
    const V s = S::add(m1, m2), m3x2 = S::add(m3, m3);
    const V out[3] = {S::add(S::add(m0, s), m3), S::add(S::sub(m1, m2), m3x2),
                      S::add(S::add(s, m4), S::add(m3x2, m3x2))};
    winograd_store_outputs<S, 3>(out, y, res, bias, ep, c, m);
  }
}

// Bands [b.b0, b.b1) of one sequence (a band: 3 * dilation consecutive outputs, one tile of 3 per
// phase), on this thread: per phase, the input transform of the windows the bands' tiles read into
// v, 5 GEMMs into mb, the output transform into b.y. Tile t of a phase reads windows t .. t + P - 1
// (its pieces of 3 taps): row t of the GEMM's A is those windows' P * C transformed values,
// adjacent in v (rows C floats apart, P * C floats long).
template <class S>
inline void bands(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                  const Winograd1dBlock& b) {
  const int64_t d = g.dilation, C = g.C, OC = g.OC, P = U[0].K / C, nb = b.b1 - b.b0, rows = nb + P - 1;
  for (int64_t p = 0; p < d; p++) {
    for (int64_t s = 0; s < rows; s++) {
      const float* w[5];
      const int64_t first = 3 * d * (b.b0 + s) + p - g.pad;
      for (int i = 0; i < 5; i++) {
        const int64_t at = first + i * d;
        w[i] = at >= b.x0 && at < b.x1 ? b.x + (at - b.x0) * C : b.zeros;
      }
      input_tile<S>(w, b.v + s * C, rows * C, C);
    }
    for (int xi = 0; xi < 5; xi++)
      sgemm_packed(nullptr, nb, b.v + xi * rows * C, C, 1, U[(size_t)xi], b.mb + xi * nb * OC, OC);
    for (int64_t t = 0; t < nb; t++) {
      float* y[3];
      const float* r[3];
      for (int q = 0; q < 3; q++) {
        const int64_t o = 3 * d * (b.b0 + t) + p + q * d;
        y[q] = o < g.OL ? b.y + (o - b.o0) * OC : nullptr;
        r[q] = o < g.OL && b.res ? b.res + (o - b.o0) * ep.ldr : nullptr;
      }
      output_tile<S>(b.mb + t * OC, nb * OC, OC, y, r, ep.bias_col, ep);
    }
  }
}

}  // namespace winograd1d_impl
}  // namespace etnp
