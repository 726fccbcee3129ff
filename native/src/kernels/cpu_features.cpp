#include "kernels/cpu_features.h"

namespace etnp {

#if defined(__x86_64__) || defined(__i386__)
bool cpu_has_avx2_fma() {
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return v;
}
bool cpu_has_avx512f() {
  static const bool v = __builtin_cpu_supports("avx512f");
  return v;
}
#else
bool cpu_has_avx2_fma() { return false; }
bool cpu_has_avx512f() { return false; }
#endif

const char* cpu_features_string() {
  if (cpu_has_avx2_fma()) return cpu_has_avx512f() ? "avx512f,avx2,fma" : "avx2,fma";
  return "generic";
}

}  // namespace etnp
