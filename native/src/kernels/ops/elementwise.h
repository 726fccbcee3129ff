// Generic elementwise machinery (broadcasting, dtype dispatch) used by several kernel files.
#pragma once
#include "kernels/kernel_util.h"

namespace etnp {

using BinaryD = double (*)(double, double);
using BinaryI = int64_t (*)(int64_t, int64_t);
using UnaryD = double (*)(double);
using UnaryI = int64_t (*)(int64_t);

// out = f(a, b) with broadcasting. Computes in double when any of a, b, out is floating,
// otherwise in int64 (fi == nullptr then means: unsupported for integers).
void binary_apply(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, BinaryD fd, BinaryI fi);
// out = f(a), same domain rule.
void unary_apply(KernelContext& ctx, const Tensor& a, Tensor& out, UnaryD fd, UnaryI fi);
// out = f(a) where f is any callable on double (for parameterised activations).
template <typename F>
void unary_apply_fn(KernelContext& ctx, const Tensor& a, Tensor& out, F f) {
  resize(out, shape_of(a));
  int64_t n = a.numel();
  if (a.dtype == DType::F32 && out.dtype == DType::F32 && a.default_dim_order() && out.default_dim_order()) {
    const float* x = a.ptr<float>();
    float* y = out.ptr<float>();
    parallel(ctx, n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) y[i] = (float)f((double)x[i]);
    });
    return;
  }
  const Tensor* ins[1] = {&a};
  for_each_broadcast(out, ins, 1, [&](int64_t o, const int64_t* off) {
    store_f64(out.data, out.dtype, o, f(load_f64(a.data, a.dtype, off[0])));
  });
}

// Integer / bool `out = f(a)` (same dtype, contiguous) in a typed loop, no per-element dtype
// dispatch; false for other dtypes and layouts. f: int64_t(int64_t), a pointer or a callable the
// compiler inlines.
template <typename F>
bool unary_int_typed(const Tensor& a, Tensor& out, F f) {
  if (a.dtype != out.dtype || !a.default_dim_order() || !out.default_dim_order()) return false;
  const int64_t n = a.numel();
  switch (a.dtype) {
    case DType::Bool: {
      const uint8_t* x = a.ptr<uint8_t>();
      uint8_t* y = out.ptr<uint8_t>();
      for (int64_t i = 0; i < n; i++) y[i] = f(x[i] ? 1 : 0) != 0;
      return true;
    }
    case DType::I64: {
      const int64_t* x = a.ptr<int64_t>();
      int64_t* y = out.ptr<int64_t>();
      for (int64_t i = 0; i < n; i++) y[i] = f(x[i]);
      return true;
    }
    case DType::I32: {
      const int32_t* x = a.ptr<int32_t>();
      int32_t* y = out.ptr<int32_t>();
      for (int64_t i = 0; i < n; i++) y[i] = (int32_t)f(x[i]);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace etnp
