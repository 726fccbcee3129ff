// The 4-bit (qgemm_qb4) or int8 (qgemm_q8) GEMM called `reps` times on the calling thread, for
// counting its instructions under an emulator (tools/count_aarch64_insns.sh: the count with reps
// R less the count with reps 0, over R, is one call's). Random weights and activations, fixed seed.
//   gemm_insn_count qb4|q8 M N K block_size reps
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/qgemm_qb4.h"

int main(int argc, char** argv) {
  using namespace etnp;
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s qb4|q8 M N K block_size reps\n", argv[0]);
    return 2;
  }
  const bool q8 = std::strcmp(argv[1], "q8") == 0;
  const int64_t M = std::atol(argv[2]), N = std::atol(argv[3]), K = std::atol(argv[4]), bs = std::atol(argv[5]);
  const int64_t reps = std::atol(argv[6]);
  if (M <= 0 || N <= 0 || K <= 0 || bs <= 0 || bs > 1024 || reps < 0) return 2;
  std::mt19937 rng(1);
  const int64_t nb = (K + bs - 1) / bs, Kp = (K + 3) / 4 * 4;
  std::vector<float> sa((size_t)M, 0.01f), bias((size_t)N, 0.5f), C((size_t)(M * N));
  std::vector<int32_t> za((size_t)M, 3);
  std::vector<uint8_t> X((size_t)(M * Kp), 0);
  for (auto& v : X) v = (uint8_t)(rng() & 255);
  if (q8) {
    std::vector<int8_t> W((size_t)(N * K));
    for (auto& v : W) v = (int8_t)((int)(rng() % 255) - 127);
    std::vector<float> sw((size_t)N, 0.01f);
    const PackedQ8 p = pack_q8(K, N, W.data(), N, 1, sw.data());
    const QActivations a{X.data(), sa.data(), za.data()};
    for (int64_t r = 0; r < reps; r++) qgemm_q8(nullptr, M, a, p, bias.data(), -1e30f, 1e30f, C.data(), N);
  } else {
    std::vector<uint8_t> W((size_t)(N * K));
    for (auto& v : W) v = (uint8_t)(rng() & 15);
    const PackedQB4 p = pack_qb4(K, N, bs, [&](int64_t k, int64_t n) { return W[(size_t)(n * K + k)]; },
                                 [&](int64_t, int64_t) { return 0.0078125f; });
    for (int64_t r = 0; r < reps; r++)
      qgemm_qb4(nullptr, M, X.data(), Kp, sa.data(), za.data(), p, bias.data(), -1e30f, 1e30f, C.data(), N);
  }
  double s = 0;
  for (float c : C) s += c;
  std::printf("%s %s M=%ld N=%ld K=%ld checksum %.9g\n", cpu_features_string(), argv[1], (long)M, (long)N, (long)K, s);
  return 0;
}
