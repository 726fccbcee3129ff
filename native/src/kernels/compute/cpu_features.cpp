#include "kernels/compute/cpu_features.h"

#include "os/amx_permission.h"
#include "os/cpu_id.h"
#include "util/compiler.h"

namespace etnp {

// ETNP_CPU=avx512, avx2 or generic caps the kernels chosen at run time (os::cpu_cap; avx512:
// everything but AMX). On aarch64 neon (or avx2: the same tier) keeps NEON without the
// dot-product instructions, generic turns NEON off; on x86-64 neon means avx2.
using os::cpu_cap;

// The x86 kernels are compiled where __x86_64__ is defined (GCC, Clang, clang-cl; not cl.exe).
#if defined(__x86_64__) || defined(__i386__)
bool cpu_has_avx2_fma() {
  static const bool v = cpu_cap() >= 1 && os::cpu_id().avx2 && os::cpu_id().fma;
  return v;
}
bool cpu_has_avx512f() {
  static const bool v = cpu_cap() >= 2 && cpu_has_avx2_fma() && os::cpu_id().avx512f;
  return v;
}
bool cpu_has_f16c() {
  static const bool v = cpu_has_avx2_fma() && os::cpu_id().f16c;
  return v;
}
// (the permission asked only where the tiles would be used: the CPU, the OS and the cap allow them)
bool cpu_has_amx_int8() {
#if !defined(__x86_64__)
  return false;  // (the tile kernels are x86-64 code)
#endif
  static const bool v = cpu_cap() >= 3 && cpu_has_avx512f() && os::cpu_id().avx512vnni && os::cpu_id().amx_int8 &&
                        os::request_amx_tiles();
  return v;
}
#else
bool cpu_has_amx_int8() { return false; }
bool cpu_has_f16c() { return false; }
bool cpu_has_avx2_fma() { return false; }
bool cpu_has_avx512f() { return false; }
#endif

bool cpu_is_amd() { return os::cpu_id().amd; }

bool cpu_has_neon() {
  static const bool v = cpu_cap() >= 1 && os::cpu_id().neon;
  return v;
}
bool cpu_has_neon_dot() {  // (where this build has the kernels: util/compiler.h)
  static const bool v = ETNP_NEON_DOT_KERNELS && cpu_cap() >= 2 && cpu_has_neon() && os::cpu_id().dotprod;
  return v;
}

const char* cpu_features_string() {
  if (cpu_has_neon()) return cpu_has_neon_dot() ? "neon,dotprod" : "neon";
  if (cpu_has_amx_int8()) return "avx512f,avx2,fma,amx-int8";
  if (cpu_has_avx2_fma()) return cpu_has_avx512f() ? "avx512f,avx2,fma" : "avx2,fma";
  return "generic";
}

}  // namespace etnp
