// Binary elementwise kernels: arithmetic, comparisons, logical/bitwise ops, where, clamp.
#include "kernels/ops/elementwise.h"

#include "kernels/compute/broadcast_f32.h"

#include <limits>

namespace etnp {

namespace {
template <typename FDc>
void binary_f32_broadcast(KernelContext& ctx, const BroadcastPlan& p, const Tensor& a, const Tensor& b, Tensor& out,
                          BinaryD fd, FDc fdc);
}

// binary_apply's loops with the element functions as callables (fdc, fic: fd and fi, or - from a
// kernel that knows them at compile time - calls the compiler inlines into the loops)
template <typename FDc, typename FIc>
void binary_apply_with(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, BinaryD fd, BinaryI fi,
                       FDc fdc, FIc fic) {
  resize_broadcast(out, a, b);  // (shapes on the stack: a small op's allocations cost more than its work)
  bool fl = is_floating(a.dtype) || is_floating(b.dtype) || is_floating(out.dtype) || !fi;
  if (fl && !fd) throw_exec(std::string(ctx.op) + " is not defined for floating-point dtypes");
  // contiguous operands: one typed loop over the merged broadcast (kernels/compute/broadcast_f32.h), no
  // per-element dtype dispatch (other layouts and dtypes: the generic loops below)
  BroadcastPlan p;
  const bool planned = a.default_dim_order() && b.default_dim_order() && out.default_dim_order() &&
                       plan_broadcast(a.sizes, (size_t)a.dim, b.sizes, (size_t)b.dim, out.sizes, (size_t)out.dim, p);
  if (planned && fl && a.dtype == DType::F32 && b.dtype == DType::F32 && out.dtype == DType::F32) {
    binary_f32_broadcast(ctx, p, a, b, out, fd, fdc);
    return;
  }
  if (planned && out.dtype == DType::Bool && a.dtype == b.dtype && (a.dtype == DType::F32 || (a.dtype == DType::I64 && !fl))) {
    // comparisons and logical ops into bool (integer ops may throw: on this thread only)
    uint8_t* z = out.ptr<uint8_t>();
    if (a.dtype == DType::F32)
      broadcast_binary(ctx.pool, p, a.ptr<float>(), b.ptr<float>(), z,
                       [fdc](float u, float v) -> uint8_t { return fdc((double)u, (double)v) != 0; });
    else
      broadcast_binary(nullptr, p, a.ptr<int64_t>(), b.ptr<int64_t>(), z,
                       [fic](int64_t u, int64_t v) -> uint8_t { return fic(u, v) != 0; });
    return;
  }
  if (planned && !fl && a.dtype == b.dtype && a.dtype == out.dtype && (a.dtype == DType::I64 || a.dtype == DType::Bool)) {
    // integer ops may throw (division by zero): on this thread only
    if (a.dtype == DType::I64)
      broadcast_binary(nullptr, p, a.ptr<int64_t>(), b.ptr<int64_t>(), out.ptr<int64_t>(), fic);
    else
      broadcast_binary(nullptr, p, a.ptr<uint8_t>(), b.ptr<uint8_t>(), out.ptr<uint8_t>(),
                       [fic](uint8_t u, uint8_t v) -> uint8_t { return fic(u != 0, v != 0) != 0; });
    return;
  }
  const Tensor* ins[2] = {&a, &b};
  if (fl) {
    for_each_broadcast(out, ins, 2, [&](int64_t o, const int64_t* off) {
      store_f64(out.data, out.dtype, o, fdc(load_f64(a.data, a.dtype, off[0]), load_f64(b.data, b.dtype, off[1])));
    });
  } else {
    for_each_broadcast(out, ins, 2, [&](int64_t o, const int64_t* off) {
      store_i64(out.data, out.dtype, o, fic(load_i64(a.data, a.dtype, off[0]), load_i64(b.data, b.dtype, off[1])));
    });
  }
}

void binary_apply(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, BinaryD fd, BinaryI fi) {
  binary_apply_with(ctx, a, b, out, fd, fi, [fd](double x, double y) { return fd(x, y); },
                    [fi](int64_t x, int64_t y) { return fi(x, y); });
}

void unary_apply(KernelContext& ctx, const Tensor& a, Tensor& out, UnaryD fd, UnaryI fi) {
  bool fl = is_floating(a.dtype) || is_floating(out.dtype) || !fi;
  if (fl) {
    if (!fd) throw_exec(std::string(ctx.op) + " is not defined for floating-point dtypes");
    unary_apply_fn(ctx, a, out, fd);
    return;
  }
  resize_like(out, a);
  if (unary_int_typed(a, out, fi)) return;
  const Tensor* ins[1] = {&a};
  for_each_broadcast(out, ins, 1, [&](int64_t o, const int64_t* off) {
    store_i64(out.data, out.dtype, o, fi(load_i64(a.data, a.dtype, off[0])));
  });
}

namespace {

void require_nonzero(int64_t y) {
  if (y == 0) throw_exec("integer division by zero");
}
int64_t safe_div_trunc(int64_t x, int64_t y) {
  require_nonzero(y);
  if (y == -1) return (int64_t)(0 - (uint64_t)x);
  return x / y;
}
int64_t safe_div_floor(int64_t x, int64_t y) {
  int64_t q = safe_div_trunc(x, y);
  if (y != -1 && (x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}
int64_t safe_mod(int64_t x, int64_t y) {  // Python-style remainder
  require_nonzero(y);
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
int64_t safe_fmod(int64_t x, int64_t y) {
  require_nonzero(y);
  return y == -1 ? 0 : x % y;
}
int64_t ipow(int64_t b, int64_t e) {
  if (e < 0) {
    if (b == 1) return 1;
    if (b == -1) return (e & 1) ? -1 : 1;
    throw_exec("integers to negative integer powers are not allowed");
  }
  uint64_t r = 1, x = (uint64_t)b;
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return (int64_t)r;
}
double py_mod(double x, double y) {
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
int64_t wrap_add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
int64_t wrap_sub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
int64_t wrap_mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }

#define BIN(name, dexpr, iexpr)                                   \
  double name##_d(double x, double y) { return dexpr; }           \
  int64_t name##_i(int64_t x, int64_t y) { return iexpr; }
BIN(add, x + y, wrap_add(x, y))
BIN(sub, x - y, wrap_sub(x, y))
BIN(mul, x * y, wrap_mul(x, y))
BIN(maximum, (std::isnan(x) || std::isnan(y)) ? NAN : (x > y ? x : y), x > y ? x : y)
BIN(minimum, (std::isnan(x) || std::isnan(y)) ? NAN : (x < y ? x : y), x < y ? x : y)
BIN(fmod, std::fmod(x, y), safe_fmod(x, y))
BIN(remainder, py_mod(x, y), safe_mod(x, y))
BIN(pow, std::pow(x, y), ipow(x, y))
BIN(eq, x == y, x == y)
BIN(ne, x != y, x != y)
BIN(lt, x < y, x < y)
BIN(le, x <= y, x <= y)
BIN(gt, x > y, x > y)
BIN(ge, x >= y, x >= y)
BIN(land, (x != 0) && (y != 0), (x != 0) && (y != 0))
BIN(lor, (x != 0) || (y != 0), (x != 0) || (y != 0))
BIN(lxor, (x != 0) != (y != 0), (x != 0) != (y != 0))
BIN(floordiv, std::floor(x / y), safe_div_floor(x, y))
BIN(truncdiv, std::trunc(x / y), safe_div_trunc(x, y))
#undef BIN
double div_d(double x, double y) { return x / y; }

// All-float32 contiguous operands, any broadcast (planned by binary_apply). + - * / computed in
// float32 equal the double result rounded to float (double holds the exact product/quotient to
// well past float's rounding point), as do max/min with their NaN rule; other functions go
// through `fd` in double, one call an element.
template <typename FDc>
void binary_f32_broadcast(KernelContext& ctx, const BroadcastPlan& p, const Tensor& a, const Tensor& b, Tensor& out,
                          BinaryD fd, FDc fdc) {
  const float* x = a.ptr<float>();
  const float* y = b.ptr<float>();
  float* z = out.ptr<float>();
  ThreadPool* pool = ctx.pool;
  if (fd == add_d) broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u + v; });
  else if (fd == sub_d) broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u - v; });
  else if (fd == mul_d) broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u * v; });
  else if (fd == div_d) broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u / v; });
  else if (fd == maximum_d)
    broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u != u || v != v ? NAN : (u > v ? u : v); });
  else if (fd == minimum_d)
    broadcast_binary(pool, p, x, y, z, [](float u, float v) { return u != u || v != v ? NAN : (u < v ? u : v); });
  // x ** 2 and x ** 3 (GELU's tanh approximation, variances): products in double are the
  // (correctly rounded) double power, without a pow call an element
  else if (fd == pow_d && b.numel() == 1 && *y == 2.f)
    broadcast_binary(pool, p, x, y, z, [](float u, float) { return (float)((double)u * u); });
  else if (fd == pow_d && b.numel() == 1 && *y == 3.f)
    broadcast_binary(pool, p, x, y, z, [](float u, float) { return (float)((double)u * u * u); });
  else broadcast_binary(pool, p, x, y, z, [fdc](float u, float v) { return (float)fdc((double)u, (double)v); });
}
double atan2_d(double x, double y) { return std::atan2(x, y); }
double hypot_d(double x, double y) { return std::hypot(x, y); }
double copysign_d(double x, double y) { return std::copysign(x, y); }
int64_t band_i(int64_t x, int64_t y) { return x & y; }
int64_t bor_i(int64_t x, int64_t y) { return x | y; }
int64_t bxor_i(int64_t x, int64_t y) { return x ^ y; }
int64_t shl_i(int64_t x, int64_t y) { return (y < 0 || y >= 64) ? 0 : (int64_t)((uint64_t)x << y); }
int64_t shr_i(int64_t x, int64_t y) { return (y < 0 || y >= 64) ? (x < 0 ? -1 : 0) : x >> y; }

// binary_apply with the element functions known at compile time: inlined into the loops (a
// comparison over an attention mask was an indirect call an element)
template <BinaryD FD, BinaryI FI>
void binary_apply_static(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out) {
  binary_apply_with(
      ctx, a, b, out, FD, FI,
      [](double x, double y) -> double {
        if constexpr (FD == nullptr) return 0.0;  // (not called: binary_apply_with throws first)
        else return FD(x, y);
      },
      [](int64_t x, int64_t y) -> int64_t {
        if constexpr (FI == nullptr) return 0;  // (not called without fi)
        else return FI(x, y);
      });
}

// Tensor (op) Tensor-or-Scalar: args (self, other, out)
template <BinaryD FD, BinaryI FI>
void binary_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  ScalarHolder h;
  binary_apply_static<FD, FI>(ctx, x, make_scalar_tensor(a[1], x, h), tensor_arg(a, 2));
}
// Scalar (op) Tensor: args (self scalar, other tensor, out)
template <BinaryD FD, BinaryI FI>
void scalar_tensor_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& y = tensor_arg(a, 1);
  ScalarHolder h;
  binary_apply_static<FD, FI>(ctx, make_scalar_tensor(a[0], y, h), y, tensor_arg(a, 2));
}

// add/sub with alpha: (self, other, alpha, out)
template <bool SUB>
void add_sub_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  ScalarHolder h;
  const Tensor& t = make_scalar_tensor(a[1], x, h);
  Tensor& out = tensor_arg(a, 3);
  bool int_alpha = a[2]->tag != Tag::Double;
  double alpha = double_arg(a, 2);
  if (alpha == 1.0) {
    binary_apply(ctx, x, t, out, SUB ? sub_d : add_d, SUB ? sub_i : add_i);
    return;
  }
  // out = x +- alpha * y, alpha applied to y first
  resize_broadcast(out, x, t);
  const Tensor* ins[2] = {&x, &t};
  bool fl = is_floating(x.dtype) || is_floating(t.dtype) || is_floating(out.dtype) || !int_alpha;
  int64_t ia = a[2]->i;
  for_each_broadcast(out, ins, 2, [&](int64_t o, const int64_t* off) {
    if (fl) {
      double y = load_f64(t.data, t.dtype, off[1]) * alpha;
      double v = load_f64(x.data, x.dtype, off[0]);
      store_f64(out.data, out.dtype, o, SUB ? v - y : v + y);
    } else {
      int64_t y = wrap_mul(load_i64(t.data, t.dtype, off[1]), ia), v = load_i64(x.data, x.dtype, off[0]);
      store_i64(out.data, out.dtype, o, SUB ? wrap_sub(v, y) : wrap_add(v, y));
    }
  });
}

// rsub.Scalar_out(self, other, alpha, out): other - alpha * self
void rsub_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  ScalarHolder h;
  const Tensor& t = make_scalar_tensor(a[1], x, h);
  double alpha = double_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  resize_like(out, x);
  const Tensor* ins[1] = {&x};
  double o = load_f64(t.data, t.dtype, 0);
  for_each_broadcast(out, ins, 1, [&](int64_t i, const int64_t* off) {
    store_f64(out.data, out.dtype, i, o - alpha * load_f64(x.data, x.dtype, off[0]));
  });
}

// div.out_mode(self, other, rounding_mode, out) and div.Scalar_mode_out
void div_mode_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  ScalarHolder h;
  const Tensor& t = make_scalar_tensor(a[1], x, h);
  std::string mode = string_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  if (mode.empty()) binary_apply(ctx, x, t, out, div_d, nullptr);
  else if (mode == "trunc") binary_apply(ctx, x, t, out, truncdiv_d, truncdiv_i);
  else if (mode == "floor") binary_apply(ctx, x, t, out, floordiv_d, floordiv_i);
  else throw_exec("unknown rounding mode '" + mode + "'");
}

bool same_sizes(const Tensor& a, const Tensor& b) {
  if (a.dim != b.dim) return false;
  for (int k = 0; k < a.dim; k++)
    if (a.sizes[k] != b.sizes[k]) return false;
  return true;
}

// where.self_out(condition, self, other, out)
void where_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& c = tensor_arg(a, 0);
  ScalarHolder hx, hy;
  const Tensor &x = make_scalar_tensor(a[1], c, hx), &y = make_scalar_tensor(a[2], c, hy);
  Tensor& out = tensor_arg(a, 3);
  Tensor tmp;
  tmp.dim = broadcast_shape_into(c, x, tmp.sizes);
  resize_broadcast(out, tmp, y);
  const Tensor* ins[3] = {&c, &x, &y};
  if (c.dtype == DType::Bool && x.dtype == out.dtype && y.dtype == out.dtype) {
    const uint8_t* cp = c.ptr<uint8_t>();
    // contiguous, the condition out's shape (or out's shape with the last dimension 1: one
    // condition a row, a mask over attention rows), each value operand out's shape or one
    // element (a mask filled with a scalar): flat loops instead of the broadcast odometer
    const int64_t n = out.numel();
    auto whole_or_one = [&](const Tensor& t) { return t.numel() == 1 || same_sizes(t, out); };
    const bool full_cond = same_sizes(c, out);
    bool per_row = !full_cond && c.dim == out.dim && out.dim > 0 && c.sizes[c.dim - 1] == 1;
    for (int k = 0; per_row && k + 1 < c.dim; k++) per_row = c.sizes[k] == out.sizes[k];
    const bool flat = out.default_dim_order() && c.default_dim_order() && x.default_dim_order() &&
                      y.default_dim_order() && (full_cond || per_row) && whole_or_one(x) && whole_or_one(y);
    auto pick = [&](auto* o_, const auto* x_, const auto* y_) {  // typed element copies
      if (flat) {
        const int64_t sx = x.numel() == 1 ? 0 : 1, sy = y.numel() == 1 ? 0 : 1;
        const int64_t inner = per_row ? out.sizes[out.dim - 1] : 1;
        for (int64_t r = 0, i = 0; i < n; r++) {
          const bool take_x = cp[r] != 0;
          for (const int64_t e = i + inner; i < e; i++) o_[i] = take_x ? x_[i * sx] : y_[i * sy];
        }
        return;
      }
      for_each_broadcast(out, ins, 3, [&](int64_t o, const int64_t* off) { o_[o] = cp[off[0]] ? x_[off[1]] : y_[off[2]]; });
    };
    switch (out.elem_size()) {
      case 1: pick((uint8_t*)out.data, (const uint8_t*)x.data, (const uint8_t*)y.data); return;
      case 2: pick((uint16_t*)out.data, (const uint16_t*)x.data, (const uint16_t*)y.data); return;
      case 4: pick((uint32_t*)out.data, (const uint32_t*)x.data, (const uint32_t*)y.data); return;
      case 8: pick((uint64_t*)out.data, (const uint64_t*)x.data, (const uint64_t*)y.data); return;
      default: break;
    }
    const size_t es = out.elem_size();
    for_each_broadcast(out, ins, 3, [&](int64_t o, const int64_t* off) {
      const Tensor& src = cp[off[0]] ? x : y;
      std::memmove((uint8_t*)out.data + o * es, (const uint8_t*)src.data + off[cp[off[0]] ? 1 : 2] * es, es);
    });
    return;
  }
  bool fl = is_floating(out.dtype);
  for_each_broadcast(out, ins, 3, [&](int64_t o, const int64_t* off) {
    bool cond = load_i64(c.data, c.dtype, off[0]) != 0;
    if (fl) store_f64(out.data, out.dtype, o, cond ? load_f64(x.data, x.dtype, off[1]) : load_f64(y.data, y.dtype, off[2]));
    else store_i64(out.data, out.dtype, o, cond ? load_i64(x.data, x.dtype, off[1]) : load_i64(y.data, y.dtype, off[2]));
  });
}

// clamp.out(self, min?, max?, out) with scalar bounds
void clamp_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  bool has_lo = opt_present(a, 1), has_hi = opt_present(a, 2);
  double lo = has_lo ? double_arg(a, 1) : -INFINITY, hi = has_hi ? double_arg(a, 2) : INFINITY;
  Tensor& out = tensor_arg(a, 3);
  if (!is_floating(x.dtype) && !is_floating(out.dtype)) {
    resize_like(out, x);
    const Tensor* ins[1] = {&x};
    int64_t ilo = has_lo ? f2i(std::ceil(lo)) : INT64_MIN, ihi = has_hi ? f2i(std::floor(hi)) : INT64_MAX;
    for_each_broadcast(out, ins, 1, [&](int64_t o, const int64_t* off) {
      int64_t v = load_i64(x.data, x.dtype, off[0]);
      store_i64(out.data, out.dtype, o, v < ilo ? ilo : v > ihi ? ihi : v);
    });
    return;
  }
  if (x.dtype == DType::F32) {  // bounds compared in the tensor's type
    lo = (double)(float)lo;
    hi = (double)(float)hi;
  }
  unary_apply_fn(ctx, x, out, [lo, hi](double v) { return std::isnan(v) ? v : std::min(std::max(v, lo), hi); });
}

// clamp.Tensor_out(self, min?, max?, out) with tensor bounds
void clamp_tensor_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor* lo = opt_tensor_arg(a, 1);
  Tensor* hi = opt_tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  Tensor shape = x;
  if (lo) { auto s = broadcast_shapes(shape, *lo); shape.dim = (int)s.size(); for (int i = 0; i < shape.dim; i++) shape.sizes[i] = s[i]; }
  if (hi) { auto s = broadcast_shapes(shape, *hi); shape.dim = (int)s.size(); for (int i = 0; i < shape.dim; i++) shape.sizes[i] = s[i]; }
  resize_like(out, shape);
  const Tensor* ins[3] = {&x, lo ? lo : &x, hi ? hi : &x};
  for_each_broadcast(out, ins, 3, [&](int64_t o, const int64_t* off) {
    double v = load_f64(x.data, x.dtype, off[0]);
    if (lo) v = std::max(v, load_f64(lo->data, lo->dtype, off[1]));
    if (hi) v = std::min(v, load_f64(hi->data, hi->dtype, off[2]));
    store_f64(out.data, out.dtype, o, v);
  });
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::add.out", &add_sub_kernel<false>, P, 4);
  r.add("aten::add.Scalar_out", &add_sub_kernel<false>, P, 4);
  r.add("aten::sub.out", &add_sub_kernel<true>, P, 4);
  r.add("aten::sub.Scalar_out", &add_sub_kernel<true>, P, 4);
  r.add("aten::rsub.Scalar_out", &rsub_kernel, P, 4);
  r.add("aten::mul.out", &binary_kernel<mul_d, mul_i>, P, 3);
  r.add("aten::mul.Scalar_out", &binary_kernel<mul_d, mul_i>, P, 3);
  r.add("aten::div.out", &binary_kernel<div_d, nullptr>, P, 3);
  r.add("aten::div.Scalar_out", &binary_kernel<div_d, nullptr>, P, 3);
  r.add("aten::div.out_mode", &div_mode_kernel, P, 4);
  r.add("aten::div.Scalar_mode_out", &div_mode_kernel, P, 4);
  r.add("aten::floor_divide.out", &binary_kernel<floordiv_d, floordiv_i>, P, 3);
  r.add("aten::floor_divide.Scalar_out", &binary_kernel<floordiv_d, floordiv_i>, P, 3);
  r.add("aten::maximum.out", &binary_kernel<maximum_d, maximum_i>, P, 3);
  r.add("aten::minimum.out", &binary_kernel<minimum_d, minimum_i>, P, 3);
  r.add("aten::fmod.Tensor_out", &binary_kernel<fmod_d, fmod_i>, P, 3);
  r.add("aten::fmod.Scalar_out", &binary_kernel<fmod_d, fmod_i>, P, 3);
  r.add("aten::remainder.Tensor_out", &binary_kernel<remainder_d, remainder_i>, P, 3);
  r.add("aten::remainder.Scalar_out", &binary_kernel<remainder_d, remainder_i>, P, 3);
  r.add("aten::pow.Tensor_Tensor_out", &binary_kernel<pow_d, pow_i>, P, 3);
  r.add("aten::pow.Tensor_Scalar_out", &binary_kernel<pow_d, pow_i>, P, 3);
  r.add("aten::pow.Scalar_out", &scalar_tensor_kernel<pow_d, pow_i>, P, 3);
  r.add("aten::atan2.out", &binary_kernel<atan2_d, nullptr>, P, 3);
  r.add("aten::hypot.out", &binary_kernel<hypot_d, nullptr>, P, 3);
  r.add("aten::copysign.out", &binary_kernel<copysign_d, nullptr>, P, 3);
  r.add("aten::eq.Tensor_out", &binary_kernel<eq_d, eq_i>, P, 3);
  r.add("aten::eq.Scalar_out", &binary_kernel<eq_d, eq_i>, P, 3);
  r.add("aten::ne.Tensor_out", &binary_kernel<ne_d, ne_i>, P, 3);
  r.add("aten::ne.Scalar_out", &binary_kernel<ne_d, ne_i>, P, 3);
  r.add("aten::lt.Tensor_out", &binary_kernel<lt_d, lt_i>, P, 3);
  r.add("aten::lt.Scalar_out", &binary_kernel<lt_d, lt_i>, P, 3);
  r.add("aten::le.Tensor_out", &binary_kernel<le_d, le_i>, P, 3);
  r.add("aten::le.Scalar_out", &binary_kernel<le_d, le_i>, P, 3);
  r.add("aten::gt.Tensor_out", &binary_kernel<gt_d, gt_i>, P, 3);
  r.add("aten::gt.Scalar_out", &binary_kernel<gt_d, gt_i>, P, 3);
  r.add("aten::ge.Tensor_out", &binary_kernel<ge_d, ge_i>, P, 3);
  r.add("aten::ge.Scalar_out", &binary_kernel<ge_d, ge_i>, P, 3);
  r.add("aten::logical_and.out", &binary_kernel<land_d, land_i>, P, 3);
  r.add("aten::logical_or.out", &binary_kernel<lor_d, lor_i>, P, 3);
  r.add("aten::logical_xor.out", &binary_kernel<lxor_d, lxor_i>, P, 3);
  r.add("aten::bitwise_and.Tensor_out", &binary_kernel<nullptr, band_i>, P, 3);
  r.add("aten::bitwise_and.Scalar_out", &binary_kernel<nullptr, band_i>, P, 3);
  r.add("aten::bitwise_or.Tensor_out", &binary_kernel<nullptr, bor_i>, P, 3);
  r.add("aten::bitwise_or.Scalar_out", &binary_kernel<nullptr, bor_i>, P, 3);
  r.add("aten::bitwise_xor.Tensor_out", &binary_kernel<nullptr, bxor_i>, P, 3);
  r.add("aten::bitwise_xor.Scalar_out", &binary_kernel<nullptr, bxor_i>, P, 3);
  r.add("aten::bitwise_left_shift.Tensor_out", &binary_kernel<nullptr, shl_i>, P, 3);
  r.add("aten::bitwise_right_shift.Tensor_out", &binary_kernel<nullptr, shr_i>, P, 3);
  r.add("aten::where.self_out", &where_kernel, P, 4);
  r.add("aten::clamp.out", &clamp_kernel, P, 4);
  r.add("aten::clamp.Tensor_out", &clamp_tensor_kernel, P, 4);
}

}  // namespace etnp
