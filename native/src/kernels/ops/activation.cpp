// Unary elementwise kernels: math functions and activations.
#include "kernels/ops/elementwise.h"
#include "kernels/compute/half_convert.h"
#include "kernels/compute/vec_math.h"

namespace etnp {
namespace {

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu_d(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
int64_t relu_i(int64_t x) { return x > 0 ? x : 0; }
double neg_d(double x) { return -x; }
int64_t neg_i(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
double abs_d(double x) { return std::fabs(x); }
int64_t abs_i(int64_t x) { return x < 0 ? neg_i(x) : x; }
double sign_d(double x) { return std::isnan(x) ? x : (double)((x > 0) - (x < 0)); }
int64_t sign_i(int64_t x) { return (x > 0) - (x < 0); }
double rsqrt_d(double x) { return 1.0 / std::sqrt(x); }
double reciprocal_d(double x) { return 1.0 / x; }
double round_d(double x) { return std::nearbyint(x); }  // half to even, as torch.round
int64_t ident_i(int64_t x) { return x; }
double lnot_d(double x) { return x == 0; }
int64_t lnot_i(int64_t x) { return x == 0; }
int64_t bnot_i(int64_t x) { return ~x; }
double isnan_d(double x) { return std::isnan(x); }
double isinf_d(double x) { return std::isinf(x); }
double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double hardswish_d(double x) { return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }
double hardsigmoid_d(double x) { return std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }
double exp_d(double x) { return std::exp(x); }
double exp2_d(double x) { return std::exp2(x); }
double expm1_d(double x) { return std::expm1(x); }
double log_d(double x) { return std::log(x); }
double log2_d(double x) { return std::log2(x); }
double log10_d(double x) { return std::log10(x); }
double log1p_d(double x) { return std::log1p(x); }
double sqrt_d(double x) { return std::sqrt(x); }
double sin_d(double x) { return std::sin(x); }
double cos_d(double x) { return std::cos(x); }
double tan_d(double x) { return std::tan(x); }
double asin_d(double x) { return std::asin(x); }
double acos_d(double x) { return std::acos(x); }
double atan_d(double x) { return std::atan(x); }
double sinh_d(double x) { return std::sinh(x); }
double cosh_d(double x) { return std::cosh(x); }
double tanh_d(double x) { return std::tanh(x); }
double asinh_d(double x) { return std::asinh(x); }
double acosh_d(double x) { return std::acosh(x); }
double atanh_d(double x) { return std::atanh(x); }
double erf_d(double x) { return std::erf(x); }
double erfc_d(double x) { return std::erfc(x); }
double floor_d(double x) { return std::floor(x); }
double ceil_d(double x) { return std::ceil(x); }
double trunc_d(double x) { return std::trunc(x); }
double frac_d(double x) { return x - std::trunc(x); }
double lgamma_d(double x) { return std::lgamma(x); }

// (self, out)
double gelu_d(double x) { return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476)); }

template <UnaryD FD, UnaryI FI>
void unary_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 1);
  if constexpr (FD != nullptr) {  // float32: the function is known here, so the loop inlines it
    if (x.dtype == DType::F32 && out.dtype == DType::F32) {
      unary_apply_fn(ctx, x, out, [](double v) { return FD(v); });
      return;
    }
  }
  if constexpr (FI != nullptr) {  // integer / bool (logical_not over a mask): FI inlined
    if (!is_floating(x.dtype) && !is_floating(out.dtype)) {
      resize_like(out, x);
      if (unary_int_typed(x, out, [](int64_t v) { return FI(v); })) return;
    }
  }
  unary_apply(ctx, x, out, FD, FI);
}

// float32 contiguous tensors through kernels/compute/vec_math.h (split across threads); float16
// ones too, widened to float32 in blocks and rounded back once (as the double path rounds its
// result: within one float16 step of it); else FD in double
template <void (*VF)(const float*, float*, int64_t), UnaryD FD>
void vec_unary_kernel(KernelContext& ctx, EValue** a, size_t n) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 1);
  const bool f32 = x.dtype == DType::F32 && out.dtype == DType::F32, f16 = x.dtype == DType::F16 && out.dtype == DType::F16;
  if ((f32 || f16) && x.default_dim_order()) {
    resize_like(out, x);
    if (out.default_dim_order()) {
      if (f32) {
        const float* xp = x.ptr<float>();
        float* yp = out.ptr<float>();
        parallel(ctx, x.numel(), 1 << 14, [&](int64_t b, int64_t e) { VF(xp + b, yp + b, e - b); });
        return;
      }
      const uint16_t* xp = x.ptr<uint16_t>();
      uint16_t* yp = out.ptr<uint16_t>();
      parallel(ctx, x.numel(), 1 << 14, [&](int64_t b, int64_t e) {
        constexpr int64_t kBlock = 512;
        float xf[kBlock], yf[kBlock];
        for (int64_t i = b; i < e; i += kBlock) {
          const int64_t m = std::min(kBlock, e - i);
          half_to_float_n(xp + i, xf, m);
          VF(xf, yf, m);
          float_to_half_n(yf, yp + i, m);
        }
      });
      return;
    }
  }
  unary_kernel<FD, nullptr>(ctx, a, n);
}

// gelu.out(self, approximate, out)
void gelu_kernel(KernelContext& ctx, EValue** a, size_t) {
  std::string approx = string_arg(a, 1);
  if (approx == "tanh")
    unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 2), [](double x) {
      return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    });
  else if (tensor_arg(a, 0).dtype == DType::F32 || tensor_arg(a, 0).dtype == DType::F16) {
    EValue* args[2] = {a[0], a[2]};
    vec_unary_kernel<vec_gelu, gelu_d>(ctx, args, 2);
  } else
    unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 2), gelu_d);
}
// leaky_relu.out(self, negative_slope, out)
void leaky_relu_kernel(KernelContext& ctx, EValue** a, size_t) {
  double s = double_arg(a, 1);
  unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 2), [s](double x) { return x > 0 ? x : x * s; });
}
// elu.out(self, alpha, scale, input_scale, out)
void elu_kernel(KernelContext& ctx, EValue** a, size_t) {
  double alpha = double_arg(a, 1), scale = double_arg(a, 2), in_scale = double_arg(a, 3);
  unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 4), [=](double x) {
    return x > 0 ? x * scale : alpha * scale * std::expm1(x * in_scale);
  });
}
// softplus.out(self, beta, threshold, out)
void softplus_kernel(KernelContext& ctx, EValue** a, size_t) {
  double beta = double_arg(a, 1), th = double_arg(a, 2);
  unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 3),
                 [=](double x) { return x * beta > th ? x : std::log1p(std::exp(x * beta)) / beta; });
}
// hardtanh.out(self, min_val, max_val, out)
void hardtanh_kernel(KernelContext& ctx, EValue** a, size_t) {
  double lo = double_arg(a, 1), hi = double_arg(a, 2);
  unary_apply_fn(ctx, tensor_arg(a, 0), tensor_arg(a, 3), [=](double x) { return x < lo ? lo : x > hi ? hi : x; });
}
// glu.out(self, dim, out)
void glu_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  Tensor& out = tensor_arg(a, 2);
  check_contiguous(x, "glu");
  auto s = shape_of(x);
  if (s[d] % 2) throw_exec("glu: halved dimension must be even");
  s[d] /= 2;
  resize(out, s);
  int64_t outer = prod(x, 0, d), h = s[d], inner = prod(x, d + 1, x.dim);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < h; j++)
      for (int64_t i = 0; i < inner; i++) {
        double u = load_f64(x.data, x.dtype, (o * 2 * h + j) * inner + i);
        double g = load_f64(x.data, x.dtype, (o * 2 * h + h + j) * inner + i);
        store_f64(out.data, out.dtype, (o * h + j) * inner + i, u * sigmoid_d(g));
      }
}

}  // namespace

void register_activation_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::relu.out", &unary_kernel<relu_d, relu_i>, P, 2);
  r.add("aten::sigmoid.out", &vec_unary_kernel<vec_sigmoid, sigmoid_d>, P, 2);
  r.add("aten::neg.out", &unary_kernel<neg_d, neg_i>, P, 2);
  r.add("aten::abs.out", &unary_kernel<abs_d, abs_i>, P, 2);
  r.add("aten::sign.out", &unary_kernel<sign_d, sign_i>, P, 2);
  r.add("aten::rsqrt.out", &unary_kernel<rsqrt_d, nullptr>, P, 2);
  r.add("aten::reciprocal.out", &unary_kernel<reciprocal_d, nullptr>, P, 2);
  r.add("aten::round.out", &unary_kernel<round_d, ident_i>, P, 2);
  r.add("aten::logical_not.out", &unary_kernel<lnot_d, lnot_i>, P, 2);
  r.add("aten::bitwise_not.out", &unary_kernel<nullptr, bnot_i>, P, 2);
  r.add("aten::isnan.out", &unary_kernel<isnan_d, nullptr>, P, 2);
  r.add("aten::isinf.out", &unary_kernel<isinf_d, nullptr>, P, 2);
  r.add("aten::silu.out", &unary_kernel<silu_d, nullptr>, P, 2);
  r.add("aten::hardswish.out", &unary_kernel<hardswish_d, nullptr>, P, 2);
  r.add("aten::hardsigmoid.out", &unary_kernel<hardsigmoid_d, nullptr>, P, 2);
  r.add("aten::exp.out", &vec_unary_kernel<vec_exp, exp_d>, P, 2);
  r.add("aten::exp2.out", &unary_kernel<exp2_d, nullptr>, P, 2);
  r.add("aten::expm1.out", &unary_kernel<expm1_d, nullptr>, P, 2);
  r.add("aten::log.out", &unary_kernel<log_d, nullptr>, P, 2);
  r.add("aten::log2.out", &unary_kernel<log2_d, nullptr>, P, 2);
  r.add("aten::log10.out", &unary_kernel<log10_d, nullptr>, P, 2);
  r.add("aten::log1p.out", &unary_kernel<log1p_d, nullptr>, P, 2);
  r.add("aten::sqrt.out", &unary_kernel<sqrt_d, nullptr>, P, 2);
  r.add("aten::sin.out", &unary_kernel<sin_d, nullptr>, P, 2);
  r.add("aten::cos.out", &unary_kernel<cos_d, nullptr>, P, 2);
  r.add("aten::tan.out", &unary_kernel<tan_d, nullptr>, P, 2);
  r.add("aten::asin.out", &unary_kernel<asin_d, nullptr>, P, 2);
  r.add("aten::acos.out", &unary_kernel<acos_d, nullptr>, P, 2);
  r.add("aten::atan.out", &unary_kernel<atan_d, nullptr>, P, 2);
  r.add("aten::sinh.out", &unary_kernel<sinh_d, nullptr>, P, 2);
  r.add("aten::cosh.out", &unary_kernel<cosh_d, nullptr>, P, 2);
  r.add("aten::tanh.out", &vec_unary_kernel<vec_tanh, tanh_d>, P, 2);
  r.add("aten::asinh.out", &unary_kernel<asinh_d, nullptr>, P, 2);
  r.add("aten::acosh.out", &unary_kernel<acosh_d, nullptr>, P, 2);
  r.add("aten::atanh.out", &unary_kernel<atanh_d, nullptr>, P, 2);
  r.add("aten::erf.out", &unary_kernel<erf_d, nullptr>, P, 2);
  r.add("aten::erfc.out", &unary_kernel<erfc_d, nullptr>, P, 2);
  r.add("aten::floor.out", &unary_kernel<floor_d, ident_i>, P, 2);
  r.add("aten::ceil.out", &unary_kernel<ceil_d, ident_i>, P, 2);
  r.add("aten::trunc.out", &unary_kernel<trunc_d, ident_i>, P, 2);
  r.add("aten::frac.out", &unary_kernel<frac_d, nullptr>, P, 2);
  r.add("aten::lgamma.out", &unary_kernel<lgamma_d, nullptr>, P, 2);
  r.add("aten::gelu.out", &gelu_kernel, P, 3);
  r.add("aten::leaky_relu.out", &leaky_relu_kernel, P, 3);
  r.add("aten::elu.out", &elu_kernel, P, 5);
  r.add("aten::softplus.out", &softplus_kernel, P, 4);
  r.add("aten::hardtanh.out", &hardtanh_kernel, P, 4);
  r.add("aten::glu.out", &glu_kernel, P, 3);
}

}  // namespace etnp
