// The int8 GEMM's AVX2 kernel (qgemm.h), for x86 CPUs with AVX2 and FMA but no AVX-512 VNNI, on
// weights packed in k pairs (PackedQ8::pairs). Activations are widened to int16 and multiplied
// with vpmaddwd, exact in int32 (no saturation), so results are the VNNI path's bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/qgemm.h"

namespace etnp {

constexpr int64_t kQ8Avx2Rows = 6;  // rows a tile

// What every tile of one call shares: the bias (or zeros) padded to whole panels, the clamp and,
// with uniform rows (one activation scale and zero point, as static int8 has), per column the
// zero-point correction (128 + zp) * col_sum (wrapping int32) and the scale product a.scale *
// w.scale, computed once per call instead of once per row and tile (null otherwise).
struct Q8Avx2Call {
  const float* bias = nullptr;
  float lo = 0.f, hi = 0.f;
  const int32_t* uni_corr = nullptr;
  const float* uni_scale = nullptr;
};

// The call's shared terms, in the caller's buffers (they must outlive the call's tasks).
Q8Avx2Call q8_avx2_call(int64_t M, const QActivations& a, const PackedQ8& w, const float* bias, float lo, float hi,
                        std::vector<float>& bias_buf, std::vector<int32_t>& corr_buf, std::vector<float>& scale_buf);

// Rows [m0, m1) x panels [p0, p1) of the product, stored as `out` says (its row 0, column 0 are the
// product's; snapped or written as codes in the epilogue). The rows are widened into this thread's
// buffer first. x86-64 with AVX2 and FMA only (the caller checks: weights packed in pairs).
void q8_avx2_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                  const Q8Avx2Call& c, const QOutput& out);

}  // namespace etnp
