// The algorithms of vec_math.h, written once over a SIMD type S (see vec_math_avx512.cpp,
// vec_math_avx2.cpp, vec_math.cpp for S) and instantiated in each path's translation unit,
// which is compiled for its instruction set. Internal to those files.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace etnp {
namespace vec_impl {

// x = k ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so r is exact); returns e^r - 1 by a
// degree-7 polynomial, and k.
template <class S>
inline typename S::V expm1_reduced(typename S::V x, typename S::V& k) {
  using V = typename S::V;
  const V log2e = S::set1(1.44269504088896341f), ln2_hi = S::set1(0.693359375f), ln2_lo = S::set1(-2.12194440e-4f);
  k = S::round(S::mul(x, log2e));
  V r = S::fnmadd(k, ln2_hi, x);
  r = S::fnmadd(k, ln2_lo, r);
  // r + r^2 (1/2 + r (1/6 + r (1/24 + r (1/120 + r (1/720 + r / 5040)))))
  V p = S::set1(1.f / 5040);
  p = S::fmadd(p, r, S::set1(1.f / 720));
  p = S::fmadd(p, r, S::set1(1.f / 120));
  p = S::fmadd(p, r, S::set1(1.f / 24));
  p = S::fmadd(p, r, S::set1(1.f / 6));
  p = S::fmadd(p, r, S::set1(0.5f));
  return S::fmadd(p, S::mul(r, r), r);
}

// e^x for x in [-104, 88.7228] after clamping (subnormal results included); the caller fixes
// the out-of-range and NaN lanes. 2^k is applied as 2^k1 2^k2 (k1 = floor(k/2)): each factor
// stays a normal float for k in [-150, 128].
template <class S>
inline typename S::V exp_core(typename S::V x) {
  using V = typename S::V;
  V k;
  V p = expm1_reduced<S>(S::min(S::max(x, S::set1(-104.f)), S::set1(88.7228f)), k);
  V k1 = S::round(S::sub(S::mul(k, S::set1(0.5f)), S::set1(0.25f)));
  return S::mul(S::mul(S::add(p, S::set1(1.f)), S::pow2(k1)), S::pow2(S::sub(k, k1)));
}

template <class S>
inline typename S::V exp_full(typename S::V x) {
  using V = typename S::V;
  V y = exp_core<S>(x);
  y = S::select(S::lt(x, S::set1(-104.f)), S::set1(0.f), y);
  y = S::select(S::gt(x, S::set1(88.7228f)), S::set1(std::numeric_limits<float>::infinity()), y);
  return S::select(S::isnan(x), x, y);
}

// e^y - 1 for y <= 0 (tanh's argument), exact near 0: 2^k (e^r - 1) + (2^k - 1).
template <class S>
inline typename S::V expm1_neg(typename S::V y) {
  using V = typename S::V;
  V k;
  V p = expm1_reduced<S>(S::max(y, S::set1(-87.3f)), k);
  V t = S::pow2(k);
  return S::add(S::mul(t, p), S::sub(t, S::set1(1.f)));
}

// sigmoid(x) from e = e^z, z = -|x| <= 0: 1 / (1 + e) for x >= 0, e / (1 + e) below (one division
// of the chosen numerator). e^z needs neither exp_core's clamping nor its two-factor 2^k: z = n ln2
// + r with n = round(z log2 e) in [-126, 0] (rounded by adding 1.5 * 2^23 + 127, whose low bits
// are then n + 127: shifted into the exponent field they are 2^n), e^r = 1 + r + r^2 q(r), q of
// degree 4 fitted on |r| <= ln2 / 2 (relative error 3e-8). Below z = -87.3365 (e < 2^-126)
// e is taken as 0: sigmoid(x) < 1.2e-38 there rounds to 0, as XNNPACK's does.
template <class S>
inline typename S::V sigmoid(typename S::V x) {
  using V = typename S::V;
  const V magic = S::set1(12583039.f);  // 0x4B40007F
  const V z = S::neg(S::abs(x));
  const V t = S::fmadd(z, S::set1(1.44269504088896341f), magic);
  const V n = S::sub(t, magic);
  V r = S::fnmadd(n, S::set1(0.693359375f), z);
  r = S::fnmadd(n, S::set1(-2.12194440e-4f), r);
  V q = S::set1(0.0013751758961007f);
  q = S::fmadd(q, r, S::set1(0.00836891494691372f));
  q = S::fmadd(q, r, S::set1(0.04166952520608902f));
  q = S::fmadd(q, r, S::set1(0.166665181517601f));
  q = S::fmadd(q, r, S::set1(0.49999988079071045f));
  const V p = S::fmadd(q, S::mul(r, r), r);  // e^r - 1
  const V s = S::shl23(t);
  V e = S::fmadd(s, p, s);
  const V zero = S::set1(0.f), one = S::set1(1.f);
  e = S::select(S::lt(z, S::set1(-87.3365402f)), zero, e);
  const V y = S::div(S::select(S::lt(x, zero), e, one), S::add(one, e));
  return S::select(S::isnan(x), x, y);
}

template <class S>
inline typename S::V tanh(typename S::V x) {
  using V = typename S::V;
  V a = S::abs(x);
  V em = expm1_neg<S>(S::mul(a, S::set1(-2.f)));  // in (-1, 0]
  V t = S::div(S::neg(em), S::add(em, S::set1(2.f)));
  V y = S::copysign(t, x);
  return S::select(S::isnan(x), x, y);
}

// gelu(x) = x/2 (1 + erf(x / sqrt 2)), erf(x / sqrt 2) = x P(x^2) / Q(x^2): a rational of degree
// 5 / 5 in x^2 fitted (minimax, by Lawson iterations) to erf on |x / sqrt 2| <= 3.9 and x clamped
// to that range (erf = 1 in float beyond it). For x >= 0 within 3 ulp; for x < 0, where 1 + erf
// cancels, the error is absolute, at most 2^-22 |x| (float arithmetic on x/2 (1 + erf), torch's
// own formula, has the same kind). One division, no exp: 5x cheaper than the erfc-based form it
// replaced, which kept 7 ulp on the negative side too.
template <class S>
inline typename S::V gelu(typename S::V x) {
  using V = typename S::V;
  const V xc = S::min(S::max(x, S::set1(-5.515432f)), S::set1(5.515432f));  // (NaN: isnan below)
  const V v = S::mul(xc, xc);
  V p = S::set1(4.530760123e-08f);
  p = S::fmadd(p, v, S::set1(1.270386201e-05f));
  p = S::fmadd(p, v, S::set1(3.391308128e-04f));
  p = S::fmadd(p, v, S::set1(9.363289922e-03f));
  p = S::fmadd(p, v, S::set1(6.786102057e-02f));
  p = S::fmadd(p, v, S::set1(7.978844643e-01f));
  V q = S::set1(1.194708148e-06f);
  q = S::fmadd(q, v, S::set1(7.385759091e-05f));
  q = S::fmadd(q, v, S::set1(1.888638246e-03f));
  q = S::fmadd(q, v, S::set1(2.868943848e-02f));
  q = S::fmadd(q, v, S::set1(2.517170608e-01f));
  q = S::fmadd(q, v, S::set1(1.f));
  const V erf = S::div(S::mul(xc, p), q);
  const V h = S::mul(x, S::set1(0.5f));
  const V y = S::fmadd(h, erf, h);
  return S::select(S::isnan(x), x, y);
}

// XNNPACK's float32 GELU (f32-vgelu rational_12_10_div, the kernels with a native FMA: AVX-512F,
// FMA3, NEON): erf(x / sqrt 2) = x P(x^2) / Q(x^2) (degree 11 / 10) with x clamped to +-5.1638283730,
// y = (x / 2) (1 + erf), the same operations in the same order, so results are XNNPACK's to the
// bit (a NaN stays NaN: min / max with the value second).
template <class S>
inline typename S::V gelu_xnn(typename S::V x) {
  using V = typename S::V;
  V xc = S::min(S::set1(5.1638283730e+00f), x);
  xc = S::max(S::set1(-5.1638283730e+00f), xc);
  const V x2 = S::mul(xc, xc);
  V p = S::fmadd(x2, S::set1(4.5835321316e-08f), S::set1(1.2609783880e-05f));
  p = S::fmadd(x2, p, S::set1(3.2973114867e-04f));
  p = S::fmadd(x2, p, S::set1(9.3065137044e-03f));
  p = S::fmadd(x2, p, S::set1(6.6972173750e-02f));
  p = S::fmadd(x2, p, S::set1(7.9788452387e-01f));
  p = S::mul(xc, p);
  V q = S::fmadd(x2, S::set1(1.1988805682e-06f), S::set1(7.2267655923e-05f));
  q = S::fmadd(x2, q, S::set1(1.8622842617e-03f));
  q = S::fmadd(x2, q, S::set1(2.8431978077e-02f));
  q = S::fmadd(x2, q, S::set1(2.5060352683e-01f));
  q = S::fmadd(x2, q, S::set1(1.f));
  const V erf = S::div(p, q);
  return S::mul(S::mul(x, S::set1(0.5f)), S::add(erf, S::set1(1.f)));
}

// Applies F lane-wise over n floats; the tail goes through a padded block.
template <class S, class F>
inline void map(const float* x, float* y, int64_t n, F f) {
  constexpr int W = S::W;
  if constexpr (W == 1) {  // the portable path: a plain loop, for the compiler's auto-vectoriser
    for (int64_t i = 0; i < n; i++) y[i] = f(x[i]);
  } else {
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {  // two independent vectors a step
      const auto a = f(S::load(x + i)), b = f(S::load(x + i + W));
      S::store(y + i, a);
      S::store(y + i + W, b);
    }
    for (; i + W <= n; i += W) S::store(y + i, f(S::load(x + i)));
    if (i < n) {
      float buf[W] = {};
      std::memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
      S::store(buf, f(S::load(buf)));
      std::memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
    }
  }
}

// The largest of x[0, n) (vector lanes, then the tail; -inf for n = 0): softmax's first pass
template <class S>
inline float row_max(const float* x, int64_t n) {
  using V = typename S::V;
  constexpr int W = S::W;
  V vm = S::set1(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + W <= n; i += W) vm = S::max(vm, S::load(x + i));
  float m = S::hmax(vm);
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

template <class S>
inline void softmax_row(const float* x, float* y, int64_t n) {
  using V = typename S::V;
  constexpr int W = S::W;
  if (n <= 0) return;
  const float m = row_max<S>(x, n);
  if (std::isnan(m) || std::isinf(m)) {  // NaN anywhere, or +-inf maxima: the scalar definition
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += std::exp((double)x[i] - m);
    for (int64_t i = 0; i < n; i++) y[i] = (float)(std::exp((double)x[i] - m) / s);
    return;
  }
  const V vmax = S::set1(m);
  V acc = S::set1(0.f);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V e = exp_full<S>(S::sub(S::load(x + i), vmax));
    S::store(y + i, e);
    acc = S::add(acc, e);
  }
  double sum = S::hsum(acc);
  if (i < n) {  // the tail's exponentials in one vector (lane by lane as whole vectors), summed in order
    float buf[W] = {};
    for (int64_t k = i; k < n; k++) buf[k - i] = x[k] - m;
    S::store(buf, exp_full<S>(S::load(buf)));
    for (int64_t k = i; k < n; k++) {
      y[k] = buf[k - i];
      sum += buf[k - i];
    }
  }
  const V inv = S::set1((float)(1.0 / sum));
  i = 0;
  for (; i + W <= n; i += W) S::store(y + i, S::mul(S::load(y + i), inv));
  for (; i < n; i++) y[i] *= (float)(1.0 / sum);
}

// XNNPACK's float32 softmax of one row (softmax-nc: rmax, then f32-raddstoreexpminusmax rr2_p5,
// then a multiply by 1 / sum), operation for operation: e^(x - max) by its degree-5 polynomial
// with FMAs (0 below the denormal cutoff), summed in its order - blocks of 4 vectors into two
// accumulators (the first and third vector into one, the second and fourth into the other), the
// two added, then whole vectors, then the zero-padded tail, then the lanes by S::hsum_f32 (halves
// added pairwise) - which is the AVX-512 kernel's (u64_acc2) with 16 lanes (the portable path's
// too) and the AVX2 one's (u32_acc2) with 8. Rows whose maximum is not finite go
// through softmax_row's scalar definition.
template <class S>
inline typename S::V exp_minus_max_xnn(typename S::V x) {
  using V = typename S::V;
  const V magic = S::set1(0x1.8000FEp23f);
  V n = S::fmadd(x, S::set1(0x1.715476p+0f), magic);
  const V sc = S::shl23(n);
  n = S::sub(n, magic);
  V t = S::fmadd(n, S::set1(-0x1.62E400p-1f), x);
  t = S::fmadd(n, S::set1(-0x1.7F7D1Cp-20f), t);
  V p = S::fmadd(S::set1(0x1.0F9F9Cp-7f), t, S::set1(0x1.573A1Ap-5f));
  p = S::fmadd(p, t, S::set1(0x1.555A80p-3f));
  p = S::fmadd(p, t, S::set1(0x1.FFFDC6p-2f));
  p = S::fmadd(p, t, S::set1(0x1.FFFFF6p-1f));
  t = S::mul(t, sc);
  const V f = S::fmadd(t, p, sc);
  return S::select(S::lt(x, S::set1(-0x1.5D589Ep6f)), S::set1(0.f), f);
}

template <class S>
inline void softmax_xnn_row(const float* x, float* y, int64_t n) {
  using V = typename S::V;
  constexpr int W = S::W;
  if (n <= 0) return;
  const float m = row_max<S>(x, n);
  if (std::isnan(m) || std::isinf(m)) {
    softmax_row<S>(x, y, n);
    return;
  }
  const V vmax = S::set1(m);
  V acc0 = S::set1(0.f), acc1 = S::set1(0.f);
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const V f0 = exp_minus_max_xnn<S>(S::sub(S::load(x + i), vmax));
    const V f1 = exp_minus_max_xnn<S>(S::sub(S::load(x + i + W), vmax));
    const V f2 = exp_minus_max_xnn<S>(S::sub(S::load(x + i + 2 * W), vmax));
    const V f3 = exp_minus_max_xnn<S>(S::sub(S::load(x + i + 3 * W), vmax));
    S::store(y + i, f0);
    S::store(y + i + W, f1);
    S::store(y + i + 2 * W, f2);
    S::store(y + i + 3 * W, f3);
    acc0 = S::add(acc0, f0);
    acc1 = S::add(acc1, f1);
    acc0 = S::add(acc0, f2);
    acc1 = S::add(acc1, f3);
  }
  V acc = S::add(acc0, acc1);
  for (; i + W <= n; i += W) {
    const V f = exp_minus_max_xnn<S>(S::sub(S::load(x + i), vmax));
    S::store(y + i, f);
    acc = S::add(acc, f);
  }
  if (i < n) {  // (the padding: -inf - max < the cutoff gives 0, which adds nothing)
    float buf[W];
    for (int j = 0; j < W; j++) buf[j] = i + j < n ? x[i + j] : -std::numeric_limits<float>::infinity();
    const V f = exp_minus_max_xnn<S>(S::sub(S::load(buf), vmax));
    S::store(buf, f);
    std::memcpy(y + i, buf, (size_t)(n - i) * sizeof(float));
    acc = S::add(acc, f);
  }
  const float sum = S::hsum_f32(acc);
  const float scale = 1.f / sum;
  const V vs = S::set1(scale);
  i = 0;
  for (; i + W <= n; i += W) S::store(y + i, S::mul(S::load(y + i), vs));
  for (; i < n; i++) y[i] *= scale;
}

// Lane-wise operations as function objects (GCC does not give lambdas the target of the file's
// pragma, so they could not inline the intrinsics).
template <class S> struct ExpOp { typename S::V operator()(typename S::V v) const { return exp_full<S>(v); } };
template <class S> struct SigmoidOp { typename S::V operator()(typename S::V v) const { return sigmoid<S>(v); } };
// x * sigmoid(x) in one pass: the sigmoid's value times x, as a Sigmoid then a Multiply of the two
// compute it (a multiply of the same two floats), without the pass between
template <class S> struct SiluOp {
  typename S::V operator()(typename S::V v) const { return S::mul(v, sigmoid<S>(v)); }
};
template <class S> struct TanhOp { typename S::V operator()(typename S::V v) const { return tanh<S>(v); } };
template <class S> struct GeluOp { typename S::V operator()(typename S::V v) const { return gelu<S>(v); } };
template <class S> struct GeluXnnOp { typename S::V operator()(typename S::V v) const { return gelu_xnn<S>(v); } };
// XNNPACK's hardswish: x * min(max(x / 6 + 1/2, 0), 1) (max(NaN, 0) = 0, then 0 * NaN = NaN)
template <class S> struct HardswishOp {
  typename S::V operator()(typename S::V v) const {
    const typename S::V t = S::fmadd(v, S::set1(1.f / 6.f), S::set1(0.5f));
    return S::mul(S::min(S::max(t, S::set1(0.f)), S::set1(1.f)), v);
  }
};

// The entry points of one path, as the dispatcher calls them.
template <class S>
struct Path {
  static void exp(const float* x, float* y, int64_t n) { map<S>(x, y, n, ExpOp<S>()); }
  static void sigmoid(const float* x, float* y, int64_t n) { map<S>(x, y, n, SigmoidOp<S>()); }
  static void silu(const float* x, float* y, int64_t n) { map<S>(x, y, n, SiluOp<S>()); }
  static void tanh(const float* x, float* y, int64_t n) { map<S>(x, y, n, TanhOp<S>()); }
  static void gelu(const float* x, float* y, int64_t n) { map<S>(x, y, n, GeluOp<S>()); }
  static void gelu_xnn(const float* x, float* y, int64_t n) { map<S>(x, y, n, GeluXnnOp<S>()); }
  static void hardswish(const float* x, float* y, int64_t n) { map<S>(x, y, n, HardswishOp<S>()); }
  static void softmax(const float* x, float* y, int64_t n) { softmax_row<S>(x, y, n); }
  static void softmax_xnn(const float* x, float* y, int64_t n) { softmax_xnn_row<S>(x, y, n); }
};

}  // namespace vec_impl
}  // namespace etnp
