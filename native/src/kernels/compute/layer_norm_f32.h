// float32 layer norm rows with the reference runtime's bits (ExecuTorch 1.3.1's optimized
// native_layer_norm.out as the published wheel builds it): see layer_norm_f32.cpp.
#pragma once
#include <cstdint>

namespace etnp {

// `rows` rows of N floats each (x, y contiguous): y = (x * scale + offset) * w + b, or for
// N < 256 (x - mean) / std * w + b, as the reference computes them (w, b may be null: 1 and 0);
// mean_out / rstd_out (nullable) get one float per row as the reference writes them. eps is the
// op's double eps, used as float.
void layer_norm_rows_f32(const float* x, int64_t rows, int64_t N, const float* w, const float* b, double eps, float* y,
                         float* mean_out, float* rstd_out);

}  // namespace etnp
