// Compiler portability: the few GCC/Clang extensions the core uses, spelled so that MSVC
// compiles them too.
//  ETNP_TARGET("avx2,fma")  a function compiled for an instruction-set extension that the rest
//                           of the build does not assume (GCC/Clang target attribute). MSVC
//                           needs none - it accepts every intrinsic in any function - so it
//                           expands to nothing there; run-time dispatch (kernels/compute/cpu_features.h)
//                           still decides whether such a function is called. (The x86 kernels
//                           are compiled under __x86_64__: GCC, Clang, and clang-cl - which builds
//                           the Windows wheel, setup.py - define it; MSVC's cl.exe does not, so a
//                           cl.exe build runs the portable kernels.)
//  ETNP_TARGET_INLINE("avx2")  the same, for a helper that must be inlined into its callers.
//  ETNP_ARM_DOTPROD         the target string of an aarch64 function using the dot-product
//                           instructions (SDOT / UDOT, FEAT_DotProd): ETNP_TARGET(ETNP_ARM_DOTPROD).
//                           The build stays base ARMv8. GCC wants "arch=armv8.2-a+dotprod" (its
//                           arm_neon.h declares SDOT for that target: "+dotprod" on base ARMv8 is
//                           not a superset), Clang (clang-cl too) "dotprod".
//  ETNP_NEON_DOT_KERNELS    1 where the aarch64 dot-product kernels are compiled: GCC, Clang 17 and
//                           later (checked: 19), and an older Clang whose target has the extension
//                           anyway, as Apple's arm64 (Clang 14 declares the SDOT intrinsics only
//                           then); 0 elsewhere: cpu_has_neon_dot() is false there.
//  ETNP_NOINLINE            a function the compiler must not inline into its callers (a kernel's
//                           inner loop kept apart from the code around it: its registers its own).
//  ETNP_PREFETCH(p)         a hint to bring the cache line at p into the cache ahead of a read
//                           (GCC/Clang builtin; nothing under cl.exe, which compiles no kernel
//                           that uses it).
//  ETNP_COMPILER_BARRIER()  the compiler keeps every memory access on its side (GCC's AMX tile
//                           intrinsics are asm statements that do not tell it which memory a tile
//                           load reads: the stores that fill a tile's source, or the tile config,
//                           must not move past the load). MSVC: _ReadWriteBarrier.
//  ETNP_SLP_ONLY            a portable register-tile kernel that GCC's loop vectoriser would
//                           vectorise across its k loop (transposing 4 rows of B each step, 10x
//                           slower): GCC then vectorises the tile's straight-line body only (SLP).
//                           Nothing elsewhere (Clang and MSVC vectorise such a body as written).
//  ETNP_AMX_KERNELS         1 where the AMX tile kernels are compiled: x86-64 outside Windows (the
//                           OS layer grants AMX on Linux only, and mingw-w64 GCC's tile intrinsics
//                           pass the tile stride as a 32-bit `long` there, which its assembler
//                           rejects). 0 elsewhere: the AMX entry points are never-called stubs.
//  ETNP_SANITIZED           1 in an ASan / MSan / TSan build: large buffers then stay heap blocks
//                           (which the sanitizers watch) instead of pages mapped from the OS.
//  etnp::mul_overflow / etnp::add_overflow  checked integer arithmetic (GCC/Clang builtins, plain
//                           C++ under cl.exe; mul_overflow under clang-cl too, since the MSVC
//                           runtime lacks the compiler-rt helper that Clang may call to multiply
//                           mixed widths).
#pragma once
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && !defined(_WIN32)
#define ETNP_AMX_KERNELS 1
#else
#define ETNP_AMX_KERNELS 0
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define ETNP_TARGET(features)
#define ETNP_TARGET_INLINE(features) __forceinline
#define ETNP_NOINLINE __declspec(noinline)
#include <intrin.h>
#define ETNP_COMPILER_BARRIER() _ReadWriteBarrier()
#else
#define ETNP_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")
#define ETNP_TARGET(features) __attribute__((target(features)))
#define ETNP_TARGET_INLINE(features) __attribute__((target(features), always_inline)) inline
#define ETNP_NOINLINE __attribute__((noinline))
#endif

#if defined(__aarch64__) && (!defined(__clang__) || __clang_major__ >= 17 || defined(__ARM_FEATURE_DOTPROD))
#define ETNP_NEON_DOT_KERNELS 1
#else
#define ETNP_NEON_DOT_KERNELS 0
#endif
#if defined(__clang__)
#define ETNP_ARM_DOTPROD "dotprod"
#else
#define ETNP_ARM_DOTPROD "arch=armv8.2-a+dotprod"
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define ETNP_PREFETCH(p) ((void)(p))
#else
#define ETNP_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define ETNP_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ETNP_SANITIZED 1
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define ETNP_SLP_ONLY __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define ETNP_SLP_ONLY
#endif

namespace etnp {

namespace detail {
// V in R's range (then *out = V), else false.
template <class R, class V>
bool fits(V v, R* out) {
  static_assert(std::is_integral<R>::value && std::is_integral<V>::value, "integers only");
  bool ok;
  if constexpr (std::is_signed<V>::value) {
    const long long s = static_cast<long long>(v);
    if constexpr (std::is_signed<R>::value)
      ok = s >= static_cast<long long>(std::numeric_limits<R>::min()) && s <= static_cast<long long>(std::numeric_limits<R>::max());
    else
      ok = s >= 0 && static_cast<unsigned long long>(s) <= static_cast<unsigned long long>(std::numeric_limits<R>::max());
  } else {
    ok = static_cast<unsigned long long>(v) <= static_cast<unsigned long long>(std::numeric_limits<R>::max());
  }
  if (ok) *out = static_cast<R>(v);
  return ok;
}

// The checks the compilers' builtins do, in plain C++ (what MSVC uses; native_tests/
// compiler_check.cpp compares them with the builtins). Exact for integers of up to 64 bits: the
// product's sign and magnitude, then whether it fits R.
template <class A, class B, class R>
bool mul_overflow_portable(A a, B b, R* out) {
  static_assert(std::is_integral<A>::value && std::is_integral<B>::value && std::is_integral<R>::value, "integers");
  using U = unsigned long long;
  auto magnitude = [](auto v) -> U {
    if constexpr (std::is_signed<decltype(v)>::value) return v < 0 ? U(0) - U(v) : U(v);
    else return U(v);
  };
  const bool negative = (a < 0) != (b < 0);
  const U ua = magnitude(a), ub = magnitude(b);
  if (ua != 0 && ub > std::numeric_limits<U>::max() / ua) return true;
  const U p = ua * ub;
  const U rmax = U(std::numeric_limits<R>::max());
  if (!negative || p == 0) {
    if (p > rmax) return true;
    *out = static_cast<R>(p);
    return false;
  }
  if constexpr (std::is_signed<R>::value) {
    if (p > rmax + 1) return true;
    *out = p == rmax + 1 ? std::numeric_limits<R>::min() : static_cast<R>(-static_cast<R>(p));
    return false;
  } else {
    return true;
  }
}

// As __builtin_add_overflow where both operands fit R (all the core's uses); an operand outside
// R's range is reported as an overflow.
template <class A, class B, class R>
bool add_overflow_portable(A a, B b, R* out) {
  R x, y;
  if (!fits(a, &x) || !fits(b, &y)) return true;
  if constexpr (std::is_signed<R>::value) {
    if (y > 0 ? x > std::numeric_limits<R>::max() - y : x < std::numeric_limits<R>::min() - y) return true;
  } else {
    if (x > std::numeric_limits<R>::max() - y) return true;
  }
  *out = static_cast<R>(x + y);
  return false;
}
}  // namespace detail

// *out = a * b; true when the exact product does not fit *out (then *out is unspecified).
template <class A, class B, class R>
inline bool mul_overflow(A a, B b, R* out) {
#if defined(_MSC_VER)  // (cl.exe and clang-cl)
  return detail::mul_overflow_portable(a, b, out);
#else
  return __builtin_mul_overflow(a, b, out);
#endif
}

// *out = a + b; true when the exact sum does not fit *out (then *out is unspecified).
template <class A, class B, class R>
inline bool add_overflow(A a, B b, R* out) {
#if defined(_MSC_VER) && !defined(__clang__)
  return detail::add_overflow_portable(a, b, out);
#else
  return __builtin_add_overflow(a, b, out);
#endif
}

}  // namespace etnp
