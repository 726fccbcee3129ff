// Kernel check (included by kernel_check.cpp): the qd8 x qb4w GEMM on 4-bit weights (qgemm_qb4)
// against the per-block path it replaces - one qgemm_q8 per block of K on the blocks' int8 values,
// accumulating into the output (bias with the first block, clamp after the last) - bit for bit:
// ragged K (not a multiple of the block, nor of 8), ragged N, M = 1 and more, bfloat16 and float32
// scales, with and without bias and clamp, one and two threads.
#pragma once
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/compute/qgemm.h"
#include "kernels/compute/qgemm_qb4.h"

static int check_qgemm_qb4_case(etnp::ThreadPool* pool, int64_t M, int64_t N, int64_t K, int64_t bs, bool f32_scales,
                                bool with_bias, bool clamp, std::mt19937& rng) {
  using namespace etnp;
  std::uniform_int_distribution<int> nib(0, 15), code(0, 255), zpd(-128, 127);
  std::uniform_real_distribution<float> u(0.001f, 0.05f), bv(-2.f, 2.f);
  const int64_t nb = (K + bs - 1) / bs;
  std::vector<uint8_t> W((size_t)(N * K));  // nibbles w + 8, [N][K]
  for (auto& v : W) v = (uint8_t)nib(rng);
  std::vector<float> S((size_t)(N * nb)), sa((size_t)M), bias((size_t)N);
  for (auto& s : S) {
    s = u(rng);
    if (!f32_scales) {  // a bfloat16 value
      uint32_t b;
      std::memcpy(&b, &s, 4);
      b &= 0xFFFF0000u;
      std::memcpy(&s, &b, 4);
    }
  }
  for (auto& s : sa) s = u(rng);
  for (auto& b : bias) b = bv(rng);
  std::vector<int32_t> zp((size_t)M);
  for (auto& z : zp) z = zpd(rng);
  if (M == 5) zp[2] = 300;  // (a zero point out of range: not qd8's, the integer paths then)
  const int64_t ldx = K + 5;
  std::vector<uint8_t> X((size_t)(M * ldx));
  for (auto& x : X) x = (uint8_t)code(rng);
  const float lo = clamp ? -0.5f : -std::numeric_limits<float>::infinity();
  const float hi = clamp ? 0.5f : std::numeric_limits<float>::infinity();
  const float* b = with_bias ? bias.data() : nullptr;
  // the per-block path
  std::vector<float> want((size_t)(M * N), 7.f), got((size_t)(M * N), 9.f);
  for (int64_t blk = 0; blk < nb; blk++) {
    const int64_t k0 = blk * bs, Kb = std::min(bs, K - k0), Kp = (Kb + 3) / 4 * 4;
    std::vector<int8_t> q((size_t)(N * Kb));
    std::vector<float> s((size_t)N);
    for (int64_t n = 0; n < N; n++) {
      s[(size_t)n] = S[(size_t)(n * nb + blk)];
      for (int64_t k = 0; k < Kb; k++) q[(size_t)(n * Kb + k)] = (int8_t)(W[(size_t)(n * K + k0 + k)] - 8);
    }
    const PackedQ8 p = pack_q8(Kb, N, q.data(), 1, Kb, s.data());
    std::vector<uint8_t> xa((size_t)(M * p.Kp), 0);
    for (int64_t m = 0; m < M; m++) std::memcpy(xa.data() + m * p.Kp, X.data() + m * ldx + k0, (size_t)Kb);
    (void)Kp;
    QActivations qa{xa.data(), sa.data(), zp.data()};
    qa.scale_rows_first = false;
    QOutput out;
    out.C = want.data();
    out.ldc = N;
    out.accumulate = blk > 0;
    const bool last = blk + 1 == nb;
    qgemm_q8(pool, M, qa, p, blk == 0 ? b : nullptr, last ? lo : -std::numeric_limits<float>::infinity(),
             last ? hi : std::numeric_limits<float>::infinity(), out);
  }
  const PackedQB4 p4 = pack_qb4(K, N, bs, [&](int64_t k, int64_t n) { return W[(size_t)(n * K + k)]; },
                                [&](int64_t n, int64_t blk) { return S[(size_t)(n * nb + blk)]; });
  if (p4.f32_scales != f32_scales) {
    std::printf("qgemm_qb4: scales packed as %s\n", p4.f32_scales ? "float32" : "bfloat16");
    return 1;
  }
  qgemm_qb4(pool, M, X.data(), ldx, sa.data(), zp.data(), p4, b, lo, hi, got.data(), N);
  if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0) {
    for (size_t i = 0; i < want.size(); i++)
      if (std::memcmp(&want[i], &got[i], 4) != 0) {
        std::printf("qgemm_qb4 M=%ld N=%ld K=%ld bs=%ld f32=%d bias=%d clamp=%d [%ld,%ld]: %.9g != %.9g\n", (long)M,
                    (long)N, (long)K, (long)bs, f32_scales, with_bias, clamp, (long)(i / N), (long)(i % N), got[i],
                    want[i]);
        break;
      }
    return 1;
  }
  return 0;
}

// Returns the number of mismatching cases.
static int check_qgemm_qb4(std::mt19937& rng) {
  if (!etnp::kQb4Used) {  // (not bit-identical to the NEON per-block path yet: not used there)
    std::printf("qgemm_qb4: not used on this architecture (the int8 blocks are): skipped\n");
    return 0;
  }
  etnp::ThreadPool one(1), two(2);
  int bad = 0, cases = 0;
  const int64_t Ms[] = {1, 2, 3, 5, 8, 9, 17, 64};
  const int64_t Ns[] = {1, 15, 16, 17, 40, 64, 70};
  const int64_t Ks[] = {7, 32, 33, 64, 100, 130, 256};
  const int64_t Bs[] = {32, 32, 16, 12, 64};
  for (int64_t M : Ms)
    for (int64_t N : Ns)
      for (int64_t K : Ks) {
        const int64_t bs = Bs[cases % 5];
        bad += check_qgemm_qb4_case((cases & 1) ? &two : &one, M, N, K, bs, cases % 7 == 3, cases % 3 != 0,
                                    cases % 4 == 1, rng);
        cases++;
      }
  // threaded sizes, a decode step's shape, and a block larger than 8 chunks
  bad += check_qgemm_qb4_case(&two, 1, 576, 1536, 32, false, false, false, rng);
  bad += check_qgemm_qb4_case(&two, 64, 200, 576, 32, false, true, true, rng);
  bad += check_qgemm_qb4_case(&two, 3, 100, 600, 128, true, true, false, rng);
  std::printf("qgemm_qb4: %d cases, %d mismatches\n", cases + 3, bad);
  return bad;
}
