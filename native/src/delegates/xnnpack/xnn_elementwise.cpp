// Elementwise XNNPACK nodes: binary ops with broadcasting, unary functions (the transcendental
// ones through kernels/compute/vec_math.h), softmax, clamp/copy/convert.
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/compute/broadcast_f32.h"
#include "kernels/kernel_util.h"
#include "kernels/ops/elementwise.h"
#include "kernels/compute/vec_math.h"

namespace etnp::xnn {

namespace {

// ---- elementwise ----
// float32 over every broadcast pattern (kernels/compute/broadcast_f32.h); false leaves shapes that do not
// broadcast to the generic path (which reports them). The arithmetic is float32's: for + - * /
// min max that equals the generic path's double result rounded to float.
// fin: the node whose clamp and output finishing (finalize_range) each task applies to its part
// (null: none); true when done so.
template <typename F>
bool binary_f32(KernelContext& ctx, Value& a, Value& b, Value& o, F f, const Node* fin) {
  BroadcastPlan p;
  if (!plan_broadcast(a.shape, b.shape, o.shape, p)) return false;
  if (fin && !dynamically_quantized(o)) {
    const float lo = fin->out_min, hi = fin->out_max;
    broadcast_binary(ctx.pool, p, a.cdata(), b.cdata(), o.data.data(), f, [&](float* w, int64_t len) {
      clamp_range(w, len, lo, hi);
      finalize_range(o, w, w, len);
    });
    return true;
  }
  broadcast_binary(ctx.pool, p, a.cdata(), b.cdata(), o.data.data(), f);
  return false;
}

// o = a f b (broadcasting); true when the node `fin` (if any) was also clamped and finished
template <typename F>
bool binary_values(KernelContext& ctx, Value& a, Value& b, Value& o, BinaryD f, F ff, const Node* fin = nullptr) {
  Tensor ta = wrap(a), tb = wrap(b);
  ensure_shape(o, broadcast_shapes(ta, tb));
  BroadcastPlan p;
  if (plan_broadcast(a.shape, b.shape, o.shape, p)) return binary_f32(ctx, a, b, o, ff, fin);
  Tensor to = wrap(o);
  binary_apply(ctx, ta, tb, to, f, nullptr);
  return false;
}
struct AddF { float operator()(float x, float y) const { return x + y; } };
struct SubF { float operator()(float x, float y) const { return x - y; } };
struct MulF { float operator()(float x, float y) const { return x * y; } };
struct DivF { float operator()(float x, float y) const { return x / y; } };
struct MinF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (y < x ? y : x); } };
struct MaxF { float operator()(float x, float y) const { return x != x || y != y ? x + y : (x < y ? y : x); } };
struct PreluF { float operator()(float x, float s) const { return x > 0 ? x : x * s; } };
double add_f(double x, double y) { return x + y; }
double sub_f(double x, double y) { return x - y; }
double mul_f(double x, double y) { return x * y; }
double div_f(double x, double y) { return x / y; }
double min_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }
double max_f(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
double prelu_f(double x, double s) { return x > 0 ? x : x * s; }

template <typename F>
bool binary_node(KernelContext& ctx, Value& a, Value& b, Value& o, BinaryD f, const Node* fin) {
  return binary_values(ctx, a, b, o, f, F(), fin);
}
template <typename F>
void same_shape(const float* a, const float* b, float* y, int64_t n) {
  const F f;
  for (int64_t i = 0; i < n; i++) y[i] = f(a[i], b[i]);
}
template <typename F>
constexpr BinaryOp binary_of(BinaryD d) {
  return {&binary_node<F>, &same_shape<F>, d};
}

// unary functions: float32 ones the compiler vectorises (exact in float32, or XNNPACK's own float
// formula), ones computed in double and rounded to float, and kernels/compute/vec_math.h's
template <typename F>
void map_f32(const float* x, float* y, int64_t n, float param) {
  const F f{param};
  for (int64_t i = 0; i < n; i++) y[i] = f(x[i]);
}
template <void (*V)(const float*, float*, int64_t)>
void map_vec(const float* x, float* y, int64_t n, float) {
  V(x, y, n);
}
void map_copy(const float* x, float* y, int64_t n, float) { copy_floats(y, x, n); }
struct FloorF { float p; float operator()(float x) const { return std::floor(x); } };
struct CeilF { float p; float operator()(float x) const { return std::ceil(x); } };
struct SqrtF { float p; float operator()(float x) const { return std::sqrt(x); } };  // correctly rounded either way
struct SquareF { float p; float operator()(float x) const { return x * x; } };
struct AbsF { float p; float operator()(float x) const { return std::fabs(x); } };
struct NegF { float p; float operator()(float x) const { return -x; } };
// (x > 0 ? x : x * p as a mask on the bits of both - the comparison a quiet one, no
// invalid-operation signal for NaN -: a loop the compiler vectorizes; written as a choice it stayed a
// branch on each element's sign, half of them mispredicted on a signal: a 64 x 6400 LeakyReLU took
// ~1/3 of the time of HiFi-GAN's resblock unit, two 64-channel convolutions)
struct LeakyF {
  float p;
  float operator()(float x) const {
    uint32_t xb, mb;
    const float m = x * p;
    std::memcpy(&xb, &x, 4);
    std::memcpy(&mb, &m, 4);
    const uint32_t keep = 0u - (uint32_t)std::isgreater(x, 0.f);
    const uint32_t r = (xb & keep) | (mb & ~keep);
    float y;
    std::memcpy(&y, &r, 4);
    return y;
  }
};
struct RsqrtF { float p; float operator()(float x) const { return (float)(1.0 / std::sqrt((double)x)); } };
struct LogF { float p; float operator()(float x) const { return (float)std::log((double)x); } };
struct SinF { float p; float operator()(float x) const { return (float)std::sin((double)x); } };
struct CosF { float p; float operator()(float x) const { return (float)std::cos((double)x); } };
struct EluF {
  float p;
  float operator()(float x) const { return (float)(x > 0 ? (double)x : (double)p * std::expm1((double)x)); }
};

// A unary node: op.f over the input's elements, split across threads when large. For a costly f
// (a transcendental function: several times a lookup) and an input on an int8 grid (see
// unary_table) the elements are looked up instead.
// Node::move_input (xnn_executor.cpp plan_moves): the output takes over input j's buffer when that
// input has the output's shape at run time and is the delegate's own buffer (not a borrowed tensor
// or a view: Value::raw); the node then reads that input from the output's buffer, in place, where
// each element is read before it is written. Returns the input's elements' new place, or null.
const float* take_input_buffer(Graph& g, Node& n, size_t j, const std::vector<int64_t>& out_shape, Scratch& sc) {
  Value &a = in(g, n, j), &o = out(g, n);
  if (!n.move_input || n.move_operand != j || &o == &a || a.raw || a.shape != out_shape) return nullptr;
  o.data.swap(a.data);
  sc.moves.emplace_back(n.output, n.inputs[j]);
  ensure_shape(o, out_shape);  // (the same element count: no reallocation)
  return o.data.data();
}

// While it lives, value v is read from `at` (its buffer, taken over by the node's output:
// take_input_buffer) instead of its own; nothing changes where `at` is null.
struct ReadInputAt {
  Value& v;
  const float* saved;
  ReadInputAt(Value& value, const float* at) : v(value), saved(value.raw) {
    if (at) v.raw = at;
  }
  ~ReadInputAt() { v.raw = saved; }
};

void unary_node(KernelContext& ctx, Graph& g, Node& n, const UnaryOp& op, Scratch& sc) {
  Value &a = in(g, n, 0), &o = out(g, n);
  const float* moved = take_input_buffer(g, n, 0, a.shape, sc);
  ensure_shape(o, a.shape);
  const float* x = moved ? moved : a.cdata();
  float* y = o.data.data();
  const int64_t total = a.numel();
  float table[257];
  Int8Grid ga;
  if (total >= 1024 && unary_table(g, n, op, table, ga)) {
    parallel(ctx, total, 1 << 15, [&](int64_t b, int64_t e) { grid_table_lookup(ga, table, x + b, y + b, e - b); });
    return;
  }
  parallel(ctx, total, op.grain, [&](int64_t b, int64_t e) { op.f(x + b, y + b, e - b, n.fparam); });
}

void softmax(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  Value &a = in(g, n, 0), &o = out(g, n);
  int64_t len = a.shape.empty() ? 1 : a.shape.back(), rows = a.numel() / std::max<int64_t>(len, 1);
  // nothing else reads the input (an attention's scores: the largest values there are): the
  // output takes its buffer and each row is computed in place (a row is read before it is written)
  const float* moved = take_input_buffer(g, n, 0, a.shape, sc);
  const float* x = moved ? moved : a.cdata();
  ensure_shape(o, a.shape);
  float* y = o.data.data();
  parallel(ctx, rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) vec_softmax_xnn_row(x + r * len, y + r * len, len);
  });
}

// Clamp, Copy, Convert: the values copied, then clamped and converted by run_node; or, without a
// clamp, converted on the way (one pass: finalize_value from the input). A Convert whose input nothing else
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
  if (!std::isfinite(n.out_min) && !std::isfinite(n.out_max) && x != y) {  // converted while copied
    finalize_value(ctx, o, x);
    n.snapped = true;
    return;
  }
  copy_values(ctx, y, x, a.numel());
}

}  // namespace

const BinaryOp* binary_op(int type) {
  static const BinaryOp add = binary_of<AddF>(add_f), sub = binary_of<SubF>(sub_f), mul = binary_of<MulF>(mul_f),
                        div = binary_of<DivF>(div_f), mn = binary_of<MinF>(min_f), mx = binary_of<MaxF>(max_f),
                        prelu = binary_of<PreluF>(prelu_f);
  switch (type) {
    case Add: return &add;
    case Subtract: return &sub;
    case Multiply: return &mul;
    case Div: return &div;
    case Minimum: return &mn;
    case Maximum: return &mx;
    case PReLU: return &prelu;  // (its slope broadcasts)
    default: return nullptr;
  }
}

const UnaryOp* unary_op(int type) {
  static const UnaryOp copy{&map_copy, false, 1 << 18}, sigmoid{&map_vec<vec_sigmoid>, true, 1 << 14},
      tanh{&map_vec<vec_tanh>, true, 1 << 14}, exp{&map_vec<vec_exp>, true, 1 << 14},
      gelu{&map_vec<vec_gelu_xnn>, true, 1 << 14}, hardswish{&map_vec<vec_hardswish>, false, 1 << 14},
      floor{&map_f32<FloorF>, false, 1 << 16}, ceil{&map_f32<CeilF>, false, 1 << 16},
      sqrt{&map_f32<SqrtF>, false, 1 << 16}, square{&map_f32<SquareF>, false, 1 << 16},
      abs{&map_f32<AbsF>, false, 1 << 16}, neg{&map_f32<NegF>, false, 1 << 16},
      leaky{&map_f32<LeakyF>, false, 1 << 16}, rsqrt{&map_f32<RsqrtF>, true, 1 << 14},
      log{&map_f32<LogF>, true, 1 << 14}, sin{&map_f32<SinF>, true, 1 << 14}, cos{&map_f32<CosF>, true, 1 << 14},
      elu{&map_f32<EluF>, true, 1 << 14};
  switch (type) {
    case Clamp: case Copy: case Convert: return &copy;  // (run_node clamps and converts)
    case Sigmoid: return &sigmoid;
    case Tanh: return &tanh;
    case Exp: return &exp;
    case Gelu: return &gelu;
    case Hardswish: return &hardswish;  // XNNPACK's float32 formula
    case Floor: return &floor;
    case Ceiling: return &ceil;
    case SquareRoot: return &sqrt;
    case Square: return &square;
    case Abs: return &abs;
    case Negate: return &neg;
    case LeakyReLU: return &leaky;
    case ReciprocalSquareRoot: return &rsqrt;
    case Log: return &log;
    case Sin: return &sin;
    case Cos: return &cos;
    case ELU: return &elu;
    default: return nullptr;
  }
}

bool unary_table(const Graph& g, Node& n, const UnaryOp& op, float* table, Int8Grid& ga) {
  const Value &a = g.values[n.inputs[0]], &o = g.values[n.output];
  const Value& grid = a.grid_source != kInvalidId ? g.values[a.grid_source] : a;  // (see Value::grid_source)
  if (!op.costly || !on_int8_grid(grid) || !(grid.scale > 0.f)) return false;
  ga = grid_of(grid);
  float xs[257];
  for (int t = 0; t < 256; t++) xs[t] = (ga.lo + (float)t) * ga.scale;  // as snap_to_grid writes them
  xs[256] = NAN;
  op.f(xs, table, 257, n.fparam);
  if (on_int8_grid(o) && o.scale > 0.f && !std::isfinite(n.out_min) && !std::isfinite(n.out_max)) {
    snap_to_grid(grid_of(o), table, 257);
    n.snapped = true;
  }
  return true;
}

bool run_elementwise(KernelContext& ctx, Graph& g, Node& n, Scratch& sc) {
  if (n.type == Clamp || n.type == Copy || n.type == Convert) {
    if (n.type == Convert && convert_codes(ctx, g, n)) return true;
    copy_value(ctx, g, n, sc);
    return true;
  }
  if (n.type == Softmax) {
    softmax(ctx, g, n, sc);
    return true;
  }
  if (const UnaryOp* u = unary_op(n.type)) {
    unary_node(ctx, g, n, *u, sc);
    return true;
  }
  if (const BinaryOp* b = binary_op(n.type)) {
    if (int8_add(g, n) && add_q8_node(ctx, g, n)) return true;
    if (in(g, n, 0).as_codes || in(g, n, 1).as_codes || out(g, n).as_codes)
      fail(n, "int8 codes whose shapes differ from the program's");  // (the plan kept them only for int8_add)
    Value &a = in(g, n, 0), &bv = in(g, n, 1), &o = out(g, n);
    const float* moved = n.move_input && n.move_operand < 2
                             ? take_input_buffer(g, n, n.move_operand, broadcast_shapes(wrap(a), wrap(bv)), sc)
                             : nullptr;
    ReadInputAt at(n.move_operand ? bv : a, moved);
    if (int8_mul(g, n)) {  // the products, then XNNPACK's requantization of them (clamped, snapped)
      const MulRequant rq = mul_q8_requant(g, n);
      ensure_shape(o, broadcast_shapes(wrap(a), wrap(bv)));
      BroadcastPlan p;
      if (plan_broadcast(a.shape, bv.shape, o.shape, p)) {  // each task's part while in cache
        broadcast_binary(ctx.pool, p, a.cdata(), bv.cdata(), o.data.data(), MulF(), rq);
      } else {
        b->node(ctx, a, bv, o, b->generic, nullptr);
        float* y = o.data.data();
        parallel(ctx, o.numel(), 1 << 14, [&](int64_t i0, int64_t i1) { rq(y + i0, i1 - i0); });
      }
      n.snapped = true;
      return true;
    }
    n.snapped = b->node(ctx, a, bv, o, b->generic, &n);
    return true;
  }
  return false;
}

void add_values(KernelContext& ctx, Value& a, Value& b, Value& o) { binary_values(ctx, a, b, o, add_f, AddF()); }

}  // namespace etnp::xnn
