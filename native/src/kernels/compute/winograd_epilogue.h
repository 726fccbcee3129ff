// The end of a Winograd output transform (winograd_impl.h, winograd1d_impl.h): a tile's NO outputs,
// one vector of channels each, get a GEMM epilogue's column bias, clamp and residual add (with its
// own clamp) and are stored; over a lane struct S (V, M, load, store, add, set1, clamp).
#pragma once
#include <cstdint>

#include "kernels/compute/gemm.h"

namespace etnp {

// out[p]: output p's channels [c, c + S::W) under mask m; y[p] where to store them (null: outside
// the result), res[p] its residual row (null: none), bias the column bias (null: none).
template <class S, int NO>
inline void winograd_store_outputs(const typename S::V* out, float* const* y, const float* const* res,
                                   const float* bias, const GemmEpilogue& ep, int64_t c, typename S::M m) {
  using V = typename S::V;
  const V lo = S::set1(ep.min), hi = S::set1(ep.max), rlo = S::set1(ep.res_min), rhi = S::set1(ep.res_max);
  const V bc = bias ? S::load(bias + c, m) : S::set1(0.f);
  for (int p = 0; p < NO; p++) {
    if (!y[p]) continue;
    V r = S::clamp(S::add(out[p], bc), lo, hi);
    if (res[p]) r = S::clamp(S::add(r, S::load(res[p] + c, m)), rlo, rhi);
    S::store(y[p] + c, r, m);
  }
}

}  // namespace etnp
