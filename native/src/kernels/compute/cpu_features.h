// Run-time CPU feature detection (selects GEMM micro-kernels).
#pragma once

namespace etnp {
bool cpu_has_avx2_fma();
bool cpu_has_avx512f();
bool cpu_has_f16c();  // float <-> half conversions (AVX2 tier and up)
// Intel AMX int8 tiles (CPU, OS and the process's permission; ETNP_CPU=avx512 and lower turn it
// off): the int8 GEMMs' prefill path
bool cpu_has_amx_int8();
bool cpu_has_neon();  // aarch64 Advanced SIMD (ETNP_CPU=generic turns it off)
// aarch64 NEON with the dot-product instructions SDOT / UDOT (ETNP_CPU=neon and lower turn them
// off: the base NEON kernels)
bool cpu_has_neon_dot();
// an AMD x86 CPU (tuning of the memory-bound kernels; no kernel depends on it for its results)
bool cpu_is_amd();
const char* cpu_features_string();
}  // namespace etnp
