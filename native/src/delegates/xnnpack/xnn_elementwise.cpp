// Elementwise XNNPACK nodes: binary ops with broadcasting, unary functions (the transcendental
// ones through kernels/vec_math.h), softmax, clamp/copy/convert.
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/broadcast_f32.h"
#include "kernels/kernel_util.h"
#include "kernels/elementwise.h"
#include "kernels/vec_math.h"

namespace etnp::xnn {

namespace {

// ---- elementwise ----
// float32 over every broadcast pattern (kernels/broadcast_f32.h); false leaves shapes that do not
// broadcast to the generic path (which reports them). The arithmetic is float32's: for + - * /
// min max that equals the generic path's double result rounded to float.
template <typename F>
bool binary_f32(KernelContext& ctx, Value& a, Value& b, Value& o, F f) {
  BroadcastPlan p;
  if (!plan_broadcast(a.shape, b.shape, o.shape, p)) return false;
  broadcast_binary(ctx.pool, p, a.data.data(), b.data.data(), o.data.data(), f);
  return true;
}

template <typename F>
void binary_values(KernelContext& ctx, Value& a, Value& b, Value& o, BinaryD f, F ff) {
  Tensor ta = wrap(a), tb = wrap(b);
  ensure_shape(o, broadcast_shapes(ta, tb));
  if (binary_f32(ctx, a, b, o, ff)) return;
  Tensor to = wrap(o);
  binary_apply(ctx, ta, tb, to, f, nullptr);
}
template <typename F>
void binary(KernelContext& ctx, Graph& g, Node& n, BinaryD f, F ff) {
  binary_values(ctx, in(g, n, 0), in(g, n, 1), out(g, n), f, ff);
}
struct AddF { float operator()(float x, float y) const { return x + y; } };
struct SubF { float operator()(float x, float y) const { return x - y; } };
struct MulF { float operator()(float x, float y) const { return x * y; } };
struct DivF { float operator()(float x, float y) const { return x / y; } };
struct MinF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (y < x ? y : x); } };
struct MaxF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (x < y ? y : x); } };
struct PreluF { float operator()(float x, float s) const { return x > 0 ? x : x * s; } };
template <typename F>
void unary(KernelContext& ctx, Graph& g, Node& n, F f) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  Tensor ta = wrap(a), to = wrap(o);
  unary_apply_fn(ctx, ta, to, f);
}
// a float32 function the compiler vectorises (exact in float32 or XNNPACK's own float formula)
template <typename F>
void unary_f32(KernelContext& ctx, Graph& g, Node& n, F f) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  const float* x = a.data.data();
  float* y = o.data.data();
  parallel(ctx, a.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++) y[i] = f(x[i]);
  });
}
// float32 elementwise functions of kernels/vec_math.h, split across threads when large
void unary_vec(KernelContext& ctx, Graph& g, Node& n, void (*f)(const float*, float*, int64_t)) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  const float* x = a.cdata();
  float* y = o.data.data();
  parallel(ctx, a.numel(), 1 << 14, [&](int64_t b, int64_t e) { f(x + b, y + b, e - b); });
}
double add_f(double x, double y) { return x + y; }
double sub_f(double x, double y) { return x - y; }
double mul_f(double x, double y) { return x * y; }
double div_f(double x, double y) { return x / y; }
double min_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }
double max_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
double prelu_f(double x, double s) { return x > 0 ? x : x * s; }

void softmax(KernelContext& ctx, Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  int64_t len = a.shape.empty() ? 1 : a.shape.back(), rows = a.numel() / std::max<int64_t>(len, 1);
  const float* x = a.cdata();
  float* y = o.data.data();
  parallel(ctx, rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) vec_softmax_row(x + r * len, y + r * len, len);
  });
}

void copy_value(Graph& g, Node& n) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  copy_floats(o.data.data(), a.data.data(), a.numel());
}

}  // namespace

bool run_elementwise(KernelContext& ctx, Graph& g, Node& n) {
  switch (n.type) {
    case Add: binary(ctx, g, n, add_f, AddF()); return true;
    case Subtract: binary(ctx, g, n, sub_f, SubF()); return true;
    case Multiply: binary(ctx, g, n, mul_f, MulF()); return true;
    case Div: binary(ctx, g, n, div_f, DivF()); return true;
    case Minimum: binary(ctx, g, n, min_f, MinF()); return true;
    case Maximum: binary(ctx, g, n, max_f, MaxF()); return true;
    case PReLU: binary(ctx, g, n, prelu_f, PreluF()); return true;
    case Clamp: case Copy: case Convert: copy_value(g, n); return true;
    case Sigmoid: unary_vec(ctx, g, n, vec_sigmoid); return true;
    case Tanh: unary_vec(ctx, g, n, vec_tanh); return true;
    case Floor: unary_f32(ctx, g, n, [](float x) { return std::floor(x); }); return true;
    case Ceiling: unary_f32(ctx, g, n, [](float x) { return std::ceil(x); }); return true;
    case SquareRoot: unary_f32(ctx, g, n, [](float x) { return std::sqrt(x); }); return true;  // correctly rounded either way
    case ReciprocalSquareRoot: unary(ctx, g, n, [](double x) { return 1.0 / std::sqrt(x); }); return true;
    case Square: unary_f32(ctx, g, n, [](float x) { return x * x; }); return true;
    case Abs: unary_f32(ctx, g, n, [](float x) { return std::fabs(x); }); return true;
    case Negate: unary_f32(ctx, g, n, [](float x) { return -x; }); return true;
    case Exp: unary_vec(ctx, g, n, vec_exp); return true;
    case Log: unary(ctx, g, n, [](double x) { return std::log(x); }); return true;
    case Sin: unary(ctx, g, n, [](double x) { return std::sin(x); }); return true;
    case Cos: unary(ctx, g, n, [](double x) { return std::cos(x); }); return true;
    case Gelu: unary_vec(ctx, g, n, vec_gelu); return true;
    case Hardswish: unary_vec(ctx, g, n, vec_hardswish); return true;  // XNNPACK's float32 formula
    case LeakyReLU: { float sl = n.fparam; unary_f32(ctx, g, n, [sl](float x) { return x > 0 ? x : x * sl; }); return true; }
    case ELU: { double al = n.fparam; unary(ctx, g, n, [al](double x) { return x > 0 ? x : al * std::expm1(x); }); return true; }
    case Softmax: softmax(ctx, g, n); return true;
    default: return false;
  }
}

void add_values(KernelContext& ctx, Value& a, Value& b, Value& o) { binary_values(ctx, a, b, o, add_f, AddF()); }

}  // namespace etnp::xnn
