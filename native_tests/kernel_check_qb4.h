// Kernel check (included by kernel_check.cpp): the qd8 x qb4w GEMM on 4-bit weights (qgemm_qb4)
// bit for bit against a scalar model of qgemm_qb4.h's float steps (int32 block sums, one FMA a
// block, the zero point's column constant, fma(F, sa, bias), the clamp) - every CPU path makes
// exactly these, so each run (ETNP_CPU=native / avx2 / generic; on aarch64 native / neon /
// generic: the dot-product tiles of 1 to 4 rows, the base NEON and portable ones) must match it -
// and, as a check of the formula itself, within a small tolerance of the product computed in
// double. Ragged K
// (not a multiple of the block, nor of 8), ragged N, M = 1 and more (tiles of rows, row groups),
// bfloat16 and float32 scales, with and without bias and clamp, zero points in and out of qd8's
// range, one and two threads. Where the CPU has AMX-INT8 (and ETNP_CPU allows it), 16 rows and
// more take the tile path (qgemm_qb4_amx.cpp): rows, columns and K ragged against its tiles,
// blocks of fewer than, exactly and more than 8 chunks (one 64-byte tile piece), and several
// row groups. One block of all K (per-channel qc4w filters), up to kQb4MaxBlock.
#pragma once
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/qgemm_qb4.h"
#include "util/fma_exact.h"

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
  if (M == 5) zp[2] = 300;  // (a zero point out of qd8's range)
  const int64_t ldx = K + 5;
  std::vector<uint8_t> X((size_t)(M * ldx));
  for (auto& x : X) x = (uint8_t)code(rng);
  const float lo = clamp ? -0.5f : -std::numeric_limits<float>::infinity();
  const float hi = clamp ? 0.5f : std::numeric_limits<float>::infinity();
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<float> want((size_t)(M * N)), got((size_t)(M * N), 9.f);
  int bad_math = 0;
  for (int64_t n = 0; n < N; n++) {
    double zd = 0;
    for (int64_t blk = 0; blk < nb; blk++) {
      int64_t ws = 0;
      for (int64_t k = blk * bs; k < std::min(K, blk * bs + bs); k++) ws += (int64_t)W[(size_t)(n * K + k)] - 8;
      zd += (double)S[(size_t)(n * nb + blk)] * (double)ws;
    }
    const float Z = (float)zd;
    for (int64_t m = 0; m < M; m++) {
      const uint8_t* x = X.data() + m * ldx;
      float F = -(float)zp[(size_t)m] * Z;
      double exact = 0, mag = 0;  // the product in double, and the sum of its terms' magnitudes
      for (int64_t blk = 0; blk < nb; blk++) {
        int32_t acc = 0;
        double t = 0, ta = 0;
        for (int64_t k = blk * bs; k < std::min(K, blk * bs + bs); k++) {
          const int32_t q = (int32_t)x[k] - 128, wv = (int32_t)W[(size_t)(n * K + k)] - 8;
          acc += q * wv;
          t += (double)(q - zp[(size_t)m]) * wv;
          ta += std::fabs((double)q * wv) + std::fabs((double)zp[(size_t)m] * wv);
        }
        const float s = S[(size_t)(n * nb + blk)];
        F = fma_exact((float)acc, s, F);
        exact += t * s;
        mag += ta * s;
      }
      const float bn = b ? b[n] : 0.f;
      want[(size_t)(m * N + n)] = std::min(std::max(fma_exact(F, sa[(size_t)m], bn), lo), hi);
      const double e = std::min(std::max(exact * sa[(size_t)m] + bn, (double)lo), (double)hi);
      // (a rounding a float step, each within half an ulp of the terms' magnitudes)
      const double tol = (double)(nb + 3) * 6e-8 * (mag * sa[(size_t)m] + std::fabs(bn)) + 1e-30;
      if (std::fabs(e - want[(size_t)(m * N + n)]) > tol) bad_math++;
    }
  }
  if (bad_math) {
    std::printf("qgemm_qb4 M=%ld N=%ld K=%ld bs=%ld: the model is off the exact product in %d places\n", (long)M,
                (long)N, (long)K, (long)bs, bad_math);
    return 1;
  }
  PackedQB4 p4 = pack_qb4(K, N, bs, [&](int64_t k, int64_t n) { return W[(size_t)(n * K + k)]; },
                                [&](int64_t n, int64_t blk) { return S[(size_t)(n * nb + blk)]; });
  if (p4.f32_scales != f32_scales) {
    std::printf("qgemm_qb4: scales packed as %s\n", p4.f32_scales ? "float32" : "bfloat16");
    return 1;
  }
  {  // packed from a program's bytes (two nibbles a byte, rows of (K + 1) / 2 bytes): the same bytes
    const int64_t rb = (K + 1) / 2;
    std::vector<uint8_t> rows((size_t)(N * rb), 0);
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < K; k++) rows[(size_t)(n * rb + k / 2)] |= (uint8_t)(W[(size_t)(n * K + k)] << (4 * (k & 1)));
    for (etnp::ThreadPool* on : {(etnp::ThreadPool*)nullptr, pool}) {  // (and packed on the pool's threads)
      const PackedQB4 pb = pack_qb4_bytes(K, N, bs, rows.data(), rb,
                                          [&](int64_t n, int64_t blk) { return S[(size_t)(n * nb + blk)]; }, on);
      if (pb.data.size() != p4.data.size() || std::memcmp(pb.data.data(), p4.data.data(), pb.data.size()) != 0) {
        std::printf("qgemm_qb4 N=%ld K=%ld bs=%ld: pack_qb4_bytes differs from pack_qb4\n", (long)N, (long)K, (long)bs);
        return 1;
      }
    }
  }
  // (and with the weights marked as streaming from memory: prefetched non-temporally, the same sums)
  for (const bool stream : {false, true}) {
    p4.stream = stream;
    std::fill(got.begin(), got.end(), 0.f);
    qgemm_qb4(pool, M, X.data(), ldx, sa.data(), zp.data(), p4, b, lo, hi, got.data(), N);
    if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0) continue;
    for (size_t i = 0; i < want.size(); i++)
      if (std::memcmp(&want[i], &got[i], 4) != 0) {
        std::printf("qgemm_qb4 M=%ld N=%ld K=%ld bs=%ld f32=%d bias=%d clamp=%d stream=%d [%ld,%ld]: %.9g != %.9g\n",
                    (long)M, (long)N, (long)K, (long)bs, f32_scales, with_bias, clamp, stream, (long)(i / N),
                    (long)(i % N), got[i], want[i]);
        break;
      }
    return 1;
  }
  return 0;
}

// Returns the number of mismatching cases.
static int check_qgemm_qb4(std::mt19937& rng) {
  if (!etnp::kQb4Used) {
    std::printf("qgemm_qb4: not used on this architecture (the int8 blocks are): skipped\n");
    return 0;
  }
  etnp::ThreadPool one(1), two(2);
  int bad = 0, cases = 0;
  const int64_t Ms[] = {1, 2, 3, 4, 5, 8, 9, 13, 17, 64};
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
  // threaded sizes, a decode step's shape, blocks larger than 8 chunks, a long K (47 blocks), two
  // row groups, the largest block
  bad += check_qgemm_qb4_case(&two, 1, 576, 1536, 32, false, false, false, rng);
  bad += check_qgemm_qb4_case(&two, 64, 200, 576, 32, false, true, true, rng);
  bad += check_qgemm_qb4_case(&one, 40, 48, 1500, 32, true, true, false, rng);
  bad += check_qgemm_qb4_case(&two, 3, 100, 600, 128, true, true, false, rng);
  bad += check_qgemm_qb4_case(&two, 130, 33, 96, 32, false, true, false, rng);
  bad += check_qgemm_qb4_case(&one, 2, 20, 2100, 1024, false, false, false, rng);
  // one row (a decode step: the panels as 4 ranges side by side, the rest one by one): a ragged
  // last panel inside a range (8 panels) and among the rest (63), float32 scales and blocks of
  // 128, one and two threads
  bad += check_qgemm_qb4_case(&one, 1, 125, 96, 32, false, true, true, rng);
  bad += check_qgemm_qb4_case(&one, 1, 1000, 200, 32, false, true, false, rng);
  bad += check_qgemm_qb4_case(&two, 1, 1000, 600, 128, true, false, true, rng);
  bad += check_qgemm_qb4_case(&one, 1, 250, 100, 12, true, true, false, rng);
  // one block of all K (a per-channel qc4w filter): K not a multiple of 8, a decode step's long
  // K (8192: the block's int32 sums over all of it), a few rows, the largest block
  bad += check_qgemm_qb4_case(&one, 3, 40, 37, 37, true, true, false, rng);
  bad += check_qgemm_qb4_case(&two, 1, 70, 8192, 8192, true, true, false, rng);
  bad += check_qgemm_qb4_case(&one, 1, 33, 2051, 2051, false, false, true, rng);
  bad += check_qgemm_qb4_case(&two, 13, 50, 1000, 1000, true, false, false, rng);
  bad += check_qgemm_qb4_case(&one, 2, 17, etnp::kQb4MaxBlock, etnp::kQb4MaxBlock, true, true, false, rng);
  cases += 15;
  // the AMX path's shapes (M >= 16): rows not a multiple of the tile's 16, blocks of 12 (chunks
  // with padding), 32 (4 chunks), 64 (8: one whole piece), 96 and 128 (a piece and a remainder,
  // two pieces), 1024; more than 256 rows (row groups of 128), threads splitting panels
  const int64_t aMs[] = {16, 31, 33, 48};
  const int64_t aNs[] = {1, 17, 48, 70};
  const int64_t aKs[] = {7, 40, 100, 200, 257};
  const int64_t aBs[] = {32, 12, 64, 96, 128, 32, 16};
  int acase = 0;
  for (int64_t M : aMs)
    for (int64_t N : aNs)
      for (int64_t K : aKs) {
        bad += check_qgemm_qb4_case((acase & 1) ? &two : &one, M, N, K, aBs[acase % 7], acase % 5 == 2, acase % 3 != 1,
                                    acase % 4 == 3, rng);
        acase++;
      }
  bad += check_qgemm_qb4_case(&two, 300, 50, 96, 32, false, true, false, rng);
  bad += check_qgemm_qb4_case(&one, 257, 16, 64, 64, true, false, true, rng);
  bad += check_qgemm_qb4_case(&two, 32, 1536, 576, 32, false, false, false, rng);
  bad += check_qgemm_qb4_case(&one, 20, 33, 2100, 1024, false, true, false, rng);
  // one block of all K (qc4w) on the tiles: a remainder past the 64-byte pieces, a long K
  bad += check_qgemm_qb4_case(&two, 40, 48, 1500, 1500, true, true, false, rng);
  bad += check_qgemm_qb4_case(&one, 17, 20, 4100, 4100, true, false, true, rng);
  cases += acase + 6;
  std::printf("qgemm_qb4: %d cases (16 rows and more on %s), %d mismatches\n", cases,
              etnp::cpu_has_amx_int8() ? "AMX tiles" : "the vector path", bad);
  return bad;
}
