// Vectorised float32 transcendental functions over arrays (AVX-512, AVX2+FMA, NEON, portable), chosen
// at run time like the GEMMs (ETNP_CPU caps the choice). Every path runs the same algorithm, so
// results agree across paths to the last bit or two: the portable path (plain C++ for the
// compiler's auto-vectoriser) rounds its multiply-adds twice where the others fuse them, except in
// hardswish and GELU. Accuracy, measured over 1e7 points against double precision
// (native_tests/kernel_check.cpp checks the bounds on every path):
//   exp      <= 2 ulp (range reduction by ln 2 in two parts, degree-7 polynomial, exact 2^n);
//            subnormal results down to e^-104, then 0; +inf above 88.7228; NaN kept
//   sigmoid  <= 3 ulp (e^-|x| by one power of two and a degree-6 fit, one division); 0 below
//            sigmoid = 2^-126, as XNNPACK's
//   tanh     <= 4 ulp (expm1(-2|x|), exact near 0)
//   gelu     <= 3 ulp for x >= 0; for x < 0 an absolute error <= 2^-22 |x| (erf by a 5/5 rational
//            in x^2, one division; 1 + erf cancels for x < 0, as in torch's float formula)
// Arrays may alias exactly (in place) but must not overlap otherwise.
#pragma once
#include <cstdint>

namespace etnp {

void vec_exp(const float* x, float* y, int64_t n);
void vec_sigmoid(const float* x, float* y, int64_t n);
// x * vec_sigmoid(x), the same bits as vec_sigmoid then a multiply, in one pass
void vec_silu(const float* x, float* y, int64_t n);
void vec_tanh(const float* x, float* y, int64_t n);
void vec_gelu(const float* x, float* y, int64_t n);  // x * (1 + erf(x / sqrt 2)) / 2
// XNNPACK's float32 GELU (its rational 12/10 erf, FMA kernels) to the bit: what XNNPACK-delegated
// GELU nodes compute (no ulp bound of ours; XNNPACK's own accuracy; on the portable path with the
// multiply-adds of XNNPACK's scalar kernel, rounded twice)
void vec_gelu_xnn(const float* x, float* y, int64_t n);
// XNNPACK's float32 hardswish, x * min(max(x / 6 + 1/2, 0), 1) (fused multiply-add): exact formula, no ulp bound
void vec_hardswish(const float* x, float* y, int64_t n);
// One softmax row: y = exp(x - max x) / sum. y may equal x.
void vec_softmax_row(const float* x, float* y, int64_t n);
// XNNPACK's float32 softmax of one row to the bit (its exp polynomial and summation order: the
// AVX-512 kernel's on AVX-512 and on the portable path - whose multiply-adds round twice - the AVX2
// one's on AVX2): what XNNPACK Softmax nodes compute
void vec_softmax_xnn_row(const float* x, float* y, int64_t n);

}  // namespace etnp
