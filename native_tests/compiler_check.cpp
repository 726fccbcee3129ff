// util/compiler.h's plain-C++ overflow checks (what MSVC builds use) agree with the GCC/Clang
// builtins, on edge values and random ones, for the operand/result types the core uses.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "util/compiler.h"

static int failures = 0;

template <class A, class B, class R>
static void check(A a, B b) {
  R r1 = 0, r2 = 0;
  bool o1 = __builtin_mul_overflow(a, b, &r1), o2 = etnp::detail::mul_overflow_portable(a, b, &r2);
  if (o1 != o2 || (!o1 && r1 != r2)) {
    std::printf("mul mismatch: %lld * %lld: builtin %d/%lld portable %d/%lld\n", (long long)a, (long long)b, o1,
                (long long)r1, o2, (long long)r2);
    failures++;
  }
  // add: the portable version reports an operand outside R as an overflow; compare where both fit
  R x, y;
  if (etnp::detail::fits(a, &x) && etnp::detail::fits(b, &y)) {
    o1 = __builtin_add_overflow(a, b, &r1);
    o2 = etnp::detail::add_overflow_portable(a, b, &r2);
    if (o1 != o2 || (!o1 && r1 != r2)) {
      std::printf("add mismatch: %lld + %lld\n", (long long)a, (long long)b);
      failures++;
    }
  }
}

template <class A, class B, class R>
static void sweep(std::mt19937_64& rng) {
  std::vector<long long> edge = {0, 1, -1, 2, -2, 3, 7, 1 << 20, -(1 << 20), (1LL << 31) - 1, -(1LL << 31),
                                 1LL << 32, (1LL << 62), std::numeric_limits<long long>::max(),
                                 std::numeric_limits<long long>::min(), 3037000499LL, 3037000500LL, -3037000500LL};
  auto as = [](long long v, auto t) { return static_cast<decltype(t)>(v); };
  for (long long a : edge)
    for (long long b : edge) check<A, B, R>(as(a, A()), as(b, B()));
  for (int i = 0; i < 200000; i++) {
    int shift_a = (int)(rng() % 64), shift_b = (int)(rng() % 64);
    check<A, B, R>(static_cast<A>(rng() >> shift_a), static_cast<B>(rng() >> shift_b));
  }
}

int main() {
  std::mt19937_64 rng(11);
  sweep<int64_t, int64_t, int64_t>(rng);
  sweep<int64_t, int32_t, int64_t>(rng);
  sweep<uint64_t, uint64_t, uint64_t>(rng);
  sweep<int64_t, int64_t, uint64_t>(rng);
  sweep<uint64_t, int64_t, int64_t>(rng);
  sweep<int32_t, int32_t, int32_t>(rng);
  std::printf("compiler_check: overflow helpers vs builtins, %d mismatches\n", failures);
  return failures ? 1 : 0;
}
