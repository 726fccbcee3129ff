// Which instruction-set extensions this CPU (and, for the wide registers, the OS) supports.
// GCC and Clang ask __builtin_cpu_supports; under MSVC and clang-cl (no libgcc / compiler-rt
// to support that) os/cpu_id.cpp reads CPUID and XGETBV itself. Arm64 always
// has NEON (Advanced SIMD is part of the base architecture); its dot-product extension (SDOT /
// UDOT, FEAT_DotProd: ARMv8.2 optional, ARMv8.4 mandatory) is asked of the OS, which alone can
// read the ID registers: Linux getauxval(AT_HWCAP) & HWCAP_ASIMDDP, Apple
// sysctlbyname("hw.optional.arm.FEAT_DotProd"), Windows IsProcessorFeaturePresent(
// PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE); elsewhere (or an OS too old to say) it counts as absent.
#pragma once

namespace etnp::os {

struct CpuId {
  bool avx2 = false, fma = false, avx512f = false, avx512vnni = false, f16c = false;  // x86-64
  // AMX-TILE and AMX-INT8 (CPUID leaf 7 EDX bits 24, 25) with the OS saving the tile state (XCR0
  // bits 17, 18); a process must still ask the OS for the tiles (os/amx_permission.h)
  bool amx_int8 = false;
  // the vendor (CPUID leaf 0: "AuthenticAMD"): the memory-bound kernels' tuning differs (a 4-bit
  // GEMV's streams: qgemm_qb4_avx512.cpp)
  bool amd = false;
  bool sha = false;  // the SHA extensions (CPUID leaf 7 EBX bit 29: SHA256RNDS2, SHA256MSG1/2)
  bool neon = false;                                                    // aarch64
  bool dotprod = false;  // aarch64 SDOT / UDOT (FEAT_DotProd)
};

const CpuId& cpu_id();

// ETNP_CPU's cap on the kernels chosen at run time (to test every path on one machine, or to
// compare them): 0 generic, 1 avx2 (or neon: the same tier), 2 avx512, 3 native - unset or anything
// else: use what the CPU has. Read once.
int cpu_cap();

}  // namespace etnp::os
