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
// A unary node: f(x, y, count) over the input's elements, split across threads when large. For
// a costly f (a transcendental function: several times a lookup) and an input on an int8 grid,
// which has 256 values (and NaN): f runs on those once, into a table, and the elements are looked
// up (the same results); when the output is on an int8 grid and the node has no clamp, the table
// holds the snapped results and the output needs no snapping pass.
template <typename F>
void unary_node(KernelContext& ctx, Graph& g, Node& n, int64_t grain, bool costly, F f) {
  Value &a = in(g, n, 0), &o = out(g, n);
  ensure_shape(o, a.shape);
  const float* x = a.cdata();
  float* y = o.data.data();
  const int64_t total = a.numel();
  const Value& grid = a.grid_source != kInvalidId ? g.values[a.grid_source] : a;  // (see Value::grid_source)
  if (!costly || !on_int8_grid(grid) || !(grid.scale > 0.f) || total < 1024) {
    parallel(ctx, total, grain, [&](int64_t b, int64_t e) { f(x + b, y + b, e - b); });
    return;
  }
  const Int8Grid ga = grid_of(grid);
  float xs[257], table[257];
  for (int t = 0; t < 256; t++) xs[t] = (ga.lo + (float)t) * ga.scale;  // as snap_to_grid writes them
  xs[256] = NAN;
  f(xs, table, 257);
  if (on_int8_grid(o) && o.scale > 0.f && !std::isfinite(n.out_min) && !std::isfinite(n.out_max)) {
    snap_to_grid(grid_of(o), table, 257);
    n.snapped = true;
  }
  parallel(ctx, total, 1 << 15, [&](int64_t b, int64_t e) { grid_table_lookup(ga, table, x + b, y + b, e - b); });
}
// a function in double, rounded to float
template <typename F>
void unary(KernelContext& ctx, Graph& g, Node& n, F f) {
  unary_node(ctx, g, n, 1 << 14, true, [&](const float* x, float* y, int64_t count) {
    for (int64_t i = 0; i < count; i++) y[i] = (float)f((double)x[i]);
  });
}
// a float32 function the compiler vectorises (exact in float32 or XNNPACK's own float formula)
template <typename F>
void unary_f32(KernelContext& ctx, Graph& g, Node& n, F f) {
  unary_node(ctx, g, n, 1 << 16, false, [&](const float* x, float* y, int64_t count) {
    for (int64_t i = 0; i < count; i++) y[i] = f(x[i]);
  });
}
// float32 elementwise functions of kernels/vec_math.h (hardswish: a few arithmetic operations)
void unary_vec(KernelContext& ctx, Graph& g, Node& n, void (*f)(const float*, float*, int64_t)) {
  unary_node(ctx, g, n, 1 << 14, f != &vec_hardswish, f);
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

// Clamp, Copy, Convert: the values copied, then clamped and converted by run_node; or, onto an
// int8 grid without a clamp, snapped on the way (one pass). A Convert whose input nothing else
// reads takes the input's buffer instead (Node::move_input; run_node converts it in place).
void copy_value(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  Value &a = in(g, n, 0), &o = out(g, n);
  if (n.move_input && &o != &a) {
    o.data.swap(a.data);
    sc.moves.emplace_back(n.output, n.inputs[0]);
    ensure_shape(o, a.shape);
    return;
  }
  ensure_shape(o, a.shape);
  const float* x = a.cdata();
  float* y = o.data.data();
  if (on_int8_grid(o) && o.scale > 0.f && !std::isfinite(n.out_min) && !std::isfinite(n.out_max)) {
    const Int8Grid go = grid_of(o);
    parallel(ctx, a.numel(), 1 << 16, [&](int64_t b, int64_t e) { snap_to_grid(go, x + b, y + b, e - b); });
    n.snapped = true;
    return;
  }
  parallel(ctx, a.numel(), 1 << 18, [&](int64_t b, int64_t e) { copy_floats(y + b, x + b, e - b); });
}

}  // namespace

bool run_elementwise(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  switch (n.type) {
    case Add: binary(ctx, g, n, add_f, AddF()); return true;
    case Subtract: binary(ctx, g, n, sub_f, SubF()); return true;
    case Multiply: binary(ctx, g, n, mul_f, MulF()); return true;
    case Div: binary(ctx, g, n, div_f, DivF()); return true;
    case Minimum: binary(ctx, g, n, min_f, MinF()); return true;
    case Maximum: binary(ctx, g, n, max_f, MaxF()); return true;
    case PReLU: binary(ctx, g, n, prelu_f, PreluF()); return true;
    case Clamp: case Copy: case Convert: copy_value(ctx, g, n, sc); return true;
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
