// Run-time CPU feature detection (selects GEMM micro-kernels).
#pragma once

namespace etnp {
bool cpu_has_avx2_fma();
bool cpu_has_avx512f();
const char* cpu_features_string();
}  // namespace etnp
