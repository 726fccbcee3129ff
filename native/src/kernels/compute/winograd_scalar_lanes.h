// winograd_impl.h's and winograd1d_impl.h's lane struct on CPU paths without a vector file: one
// float a "vector" (the compiler may vectorise the loops over channels).
#pragma once
#include <cstdint>

#include "kernels/compute/portable_ops.h"

namespace etnp {

struct WinogradScalarLanes {
  using V = float;
  using M = bool;
  static constexpr int64_t W = 1;
  static M mask(int64_t) { return true; }
  static V load(const float* p, M) { return *p; }
  static void store(float* p, V v, M) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V set1(float x) { return x; }
  static V clamp(V v, V lo, V hi) { return clamp_f32(v, lo, hi); }
};

}  // namespace etnp
