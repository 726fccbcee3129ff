#include "os/cpu_id.h"

#include <cstdlib>
#include <cstring>

// MSVC's runtime (cl.exe, and clang-cl too) has no __builtin_cpu_supports support code
// (libgcc's / compiler-rt's __cpu_model): CPUID through <intrin.h> there.
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <immintrin.h>
#include <intrin.h>
#define ETNP_CPUID_MSVC_X86 1
#elif defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif (defined(__aarch64__) || defined(_M_ARM64)) && defined(_WIN32)
#include "os/win32_api.h"
#ifndef PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE  // (older SDK / mingw-w64 headers lack the constant)
#define PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE 43
#endif
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP  // (<asm/hwcap.h>'s bit, for C libraries whose headers predate it)
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#endif

namespace etnp::os {

namespace {
#if defined(__aarch64__) || defined(_M_ARM64)
bool arm64_dotprod() {
#if defined(_WIN32)
  return IsProcessorFeaturePresent(PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE) != 0;
#elif defined(__APPLE__)
  int v = 0;  // (macOS 12 and later name it; earlier ones answer an error: absent)
  size_t size = sizeof(v);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &size, nullptr, 0) == 0 && v != 0;
#elif defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}
#endif

CpuId detect() {
  CpuId id;
#if defined(ETNP_CPUID_MSVC_X86)
  int r[4];
  __cpuid(r, 0);
  const int max_leaf = r[0];
  id.amd = r[1] == 0x68747541 && r[3] == 0x69746e65 && r[2] == 0x444d4163;  // "Auth" "enti" "cAMD"
  __cpuid(r, 1);
  const bool osxsave = (r[2] >> 27) & 1, fma = (r[2] >> 12) & 1, f16c = (r[2] >> 29) & 1;
  const unsigned long long xcr0 = osxsave ? _xgetbv(0) : 0;
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  id.f16c = ymm && f16c;
  if (max_leaf >= 7) {
    __cpuidex(r, 7, 0);
    id.avx2 = ymm && ((r[1] >> 5) & 1);
    id.fma = ymm && fma;
    id.avx512f = zmm && ((r[1] >> 16) & 1);
    id.avx512vnni = zmm && ((r[2] >> 11) & 1);
    id.amx_int8 = (xcr0 & 0x60000) == 0x60000 && ((r[3] >> 24) & 3) == 3;
    id.sha = (r[1] >> 29) & 1;
  }
#elif defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  id.avx2 = __builtin_cpu_supports("avx2");
  id.fma = __builtin_cpu_supports("fma");
  id.avx512f = __builtin_cpu_supports("avx512f");
  id.avx512vnni = __builtin_cpu_supports("avx512vnni");
  {  // (no __builtin_cpu_supports string for it in every compiler: CPUID leaf 1, ECX bit 29)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0, &a, &b, &c, &d)) id.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
    if (__get_cpuid(1, &a, &b, &c, &d)) id.f16c = id.avx2 && ((c >> 29) & 1);
    const bool osxsave = (c >> 27) & 1;
    unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
    const bool leaf7 = __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7);
    id.sha = leaf7 && ((b7 >> 29) & 1);
    if (osxsave && leaf7 && ((d7 >> 24) & 3) == 3) {
      unsigned lo = 0, hi = 0;  // XCR0 (xgetbv 0): the OS saves XTILECFG and XTILEDATA
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      id.amx_int8 = (lo & 0x60000u) == 0x60000u;
    }
  }
#elif defined(__aarch64__) || defined(_M_ARM64)
  id.neon = true;
  id.dotprod = arm64_dotprod();
#endif
  return id;
}
}  // namespace

const CpuId& cpu_id() {
  static const CpuId id = detect();
  return id;
}

int cpu_cap() {
  static const int cap = [] {
    const char* v = std::getenv("ETNP_CPU");
    if (v && std::strcmp(v, "generic") == 0) return 0;
    if (v && (std::strcmp(v, "avx2") == 0 || std::strcmp(v, "neon") == 0)) return 1;
    if (v && std::strcmp(v, "avx512") == 0) return 2;
    return 3;
  }();
  return cap;
}

}  // namespace etnp::os
