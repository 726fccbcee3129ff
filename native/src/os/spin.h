// A spin-wait hint for the CPU (x86 PAUSE, Arm YIELD), on GCC, Clang and MSVC alike.
#pragma once
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

namespace etnp::os {

inline void cpu_relax() {
#if defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_IX86))
  _mm_pause();
#elif defined(_MSC_VER) && !defined(__clang__) && defined(_M_ARM64)
  __yield();
#elif defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

}  // namespace etnp::os
