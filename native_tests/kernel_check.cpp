// Kernel check: the thread pool's contract, vec_math's accuracy bounds, then the packed float GEMM and the int8 GEMM against
// naive loops over many shapes
// (ragged rows and columns, K not a multiple of 4, bias/clamp epilogues, fused residual adds), on whichever paths
// this CPU selects (run it again with ETNP_CPU=avx2 / generic for the others). Exit 1 on mismatch.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "kernels/compute/row_extreme.h"
#include "kernels/compute/add_q8.h"
#include "kernels/compute/broadcast_f32.h"
#include "kernels/compute/column_sums.h"
#include "kernels/compute/conv1d_rows.h"
#include "kernels/compute/cpu_features.h"
#include "kernels/compute/depthwise.h"
#include "kernels/compute/depthwise_q8.h"
#include "kernels/compute/gemm.h"
#include "kernels/compute/half_convert.h"
#include "kernels/compute/qgemm.h"
#include "kernels/compute/quantize_row.h"
#include "kernels/compute/row_sums.h"
#include "kernels/compute/code_sums.h"
#include "kernels/compute/transpose_f32.h"
#include "kernels/compute/transpose_u8.h"
#include "kernels/compute/vec_math.h"
#include "kernels/compute/window_reduce.h"
#include "kernels/compute/winograd_f32.h"
#include "util/fma_exact.h"
#include "kernel_check_arena.h"
#include "kernel_check_qb4.h"

using namespace etnp;

static int failures = 0;

static void check_sgemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, bool residual, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t ldr = N + 3;  // a residual with its own row stride
  std::vector<float> A(M * K), B(K * N), bias(N), C(M * N, 7.f), R(M * ldr);
  for (auto& x : A) x = u(rng);
  for (auto& x : B) x = u(rng);
  for (auto& x : bias) x = u(rng);
  for (auto& x : R) x = u(rng);
  GemmEpilogue ep;
  ep.bias_col = bias.data();
  ep.min = -0.5f;
  ep.max = 0.75f;
  if (residual) {
    ep.residual = R.data();
    ep.ldr = ldr;
    ep.res_min = -0.25f;
    ep.res_max = 1.25f;
  }
  if (M % 2) {  // B given as its transpose [N, K] (how weights are stored): the other packing loop
    std::vector<float> Bt(N * K);
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) Bt[n * K + k] = B[k * N + n];
    sgemm(pool, M, N, K, A.data(), K, 1, Bt.data(), 1, K, C.data(), N, ep);
  } else {
    sgemm(pool, M, N, K, A.data(), K, 1, B.data(), N, 1, C.data(), N, ep);
  }
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = bias[n];
      for (int64_t k = 0; k < K; k++) s += (double)A[m * K + k] * B[k * N + n];
      float want = std::fmin(std::fmax((float)s, ep.min), ep.max), got = C[m * N + n];
      if (residual) want = std::fmin(std::fmax(want + R[m * ldr + n], ep.res_min), ep.res_max);
      if (std::fabs(want - got) > 1e-4f * (1 + K / 64)) {
        if (failures++ < 5) std::printf("sgemm M=%ld N=%ld K=%ld (%ld,%ld): %g != %g\n", (long)M, (long)N, (long)K, (long)m, (long)n, got, want);
      }
    }
}

// The AVX-512 driver sums each element as one FMA chain over k from zero, then adds the bias and
// clamps - also when it sweeps a long K in chunks with the partial sums held in C: the result must
// be exactly that chain's (a chunk boundary that restarted or re-rounded a sum would show here).
static void check_sgemm_chain(ThreadPool* pool, int64_t M, int64_t N, int64_t K, std::mt19937& rng) {
  if (!cpu_has_avx512f()) return;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> A(M * K), B(K * N), bias(N), C(M * N, 7.f);
  for (auto& x : A) x = u(rng);
  for (auto& x : B) x = u(rng);
  for (auto& x : bias) x = u(rng);
  GemmEpilogue ep;
  ep.bias_col = bias.data();
  ep.min = -3.f;
  ep.max = 3.f;
  PackedB pb = pack_b(pool, K, N, B.data(), N, 1);
  sgemm_packed(pool, M, A.data(), K, 1, pb, C.data(), N, ep);
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      float acc = 0.f;
      for (int64_t k = 0; k < K; k++) acc = fma_exact(A[m * K + k], B[k * N + n], acc);  // (mingw-w64's std::fma is not exact)
      const float want = std::fmin(std::fmax(acc + bias[n], ep.min), ep.max), got = C[m * N + n];
      if (want != got && failures++ < 5)
        std::printf("sgemm chain M=%ld N=%ld K=%ld (%ld,%ld): %.9g != %.9g\n", (long)M, (long)N, (long)K, (long)m, (long)n,
                    got, want);
    }
}

// Float16 panels (a float16 filter) give exactly the results of float32 panels of the same values
// (the widening is exact, the sums run in the same order) on every kernel: row-major A, strided A
// (the packed-A / portable tiles), and the indirect convolution rows; and a filter with a value
// that is not a float16 keeps float32 panels.
static void check_sgemm_half(ThreadPool* pool, int64_t M, int64_t N, int64_t K, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> A(M * K), At(K * M), B(K * N), bias(N), C1(M * N), C2(M * N);
  for (auto& x : A) x = u(rng);
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++) At[k * M + m] = A[m * K + k];
  for (auto& x : B) x = half_to_float(float_to_half(u(rng)));
  for (auto& x : bias) x = u(rng);
  GemmEpilogue ep;
  ep.bias_col = bias.data();
  ep.min = -2.f;
  ep.max = 2.5f;
  const PackedB pf = pack_b(pool, K, N, B.data(), N, 1), ph = pack_b(pool, K, N, B.data(), N, 1, true);
  if ((ph.half.empty() || !ph.data.empty()) && failures++ < 5) std::printf("sgemm half K=%ld N=%ld: not packed as float16\n", (long)K, (long)N);
  auto same = [&](const char* what) {
    if (std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float)) != 0 && failures++ < 5)
      std::printf("sgemm half (%s) M=%ld N=%ld K=%ld: differs from float32 panels\n", what, (long)M, (long)N, (long)K);
  };
  sgemm_packed(pool, M, A.data(), K, 1, pf, C1.data(), N, ep);
  sgemm_packed(pool, M, A.data(), K, 1, ph, C2.data(), N, ep);
  same("row-major A");
  sgemm_packed(pool, M, At.data(), 1, M, pf, C1.data(), N, ep);
  sgemm_packed(pool, M, At.data(), 1, M, ph, C2.data(), N, ep);
  same("strided A");
  std::vector<const float*> rows(M);
  std::vector<int32_t> koff(K);
  for (int64_t m = 0; m < M; m++) rows[m] = A.data() + m * K;
  for (int64_t k = 0; k < K; k++) koff[k] = (int32_t)k;
  if (sgemm_packed_indirect(pool, M, rows.data(), koff.data(), pf, C1.data(), N, ep)) {
    sgemm_packed_indirect(pool, M, rows.data(), koff.data(), ph, C2.data(), N, ep);
    same("indirect");
  }
  B[(K * N) / 2] = 0.1f;  // not a float16
  const PackedB pm = pack_b(pool, K, N, B.data(), N, 1, true);
  if ((!pm.half.empty() || pm.data.size() != pf.data.size()) && failures++ < 5)
    std::printf("sgemm half K=%ld N=%ld: a value that is not a float16 was packed as one\n", (long)K, (long)N);
}

static void check_qgemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, std::mt19937& rng) {
  std::uniform_int_distribution<int> qa(-128, 127), qw(-127, 127);
  std::uniform_real_distribution<float> u(0.001f, 0.05f);
  int64_t Kp = (K + 3) / 4 * 4;
  std::vector<int8_t> W(K * N);
  std::vector<uint8_t> X(M * Kp, 0);
  std::vector<int32_t> xi(M * K), zp(M);
  std::vector<float> sw(N), sa(M), bias(N), C(M * N);
  for (auto& x : W) x = (int8_t)qw(rng);
  for (auto& s : sw) s = u(rng);
  for (auto& b : bias) b = u(rng) * 10;
  const bool uniform = (M + K) % 2 == 0;  // one scale and zero point for all rows (static int8), or per row
  for (int64_t m = 0; m < M; m++) {
    sa[m] = uniform && m ? sa[0] : u(rng);
    zp[m] = uniform && m ? zp[0] : qa(rng);
    for (int64_t k = 0; k < K; k++) {
      xi[m * K + k] = qa(rng);
      X[m * Kp + k] = (uint8_t)(xi[m * K + k] + 128);
    }
  }
  PackedQ8 p = pack_q8(K, N, W.data(), N, 1, sw.data());
  if (pool) {  // packed on the pool's threads, from [K, N] and from [N, K] (the same weights): the same bytes
    std::vector<int8_t> T(W.size());
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) T[n * K + k] = W[k * N + n];
    for (const PackedQ8& q : {pack_q8(K, N, W.data(), N, 1, sw.data(), pool), pack_q8(K, N, T.data(), 1, K, sw.data(), pool)})
      if (q.data.size() != p.data.size() || std::memcmp(q.data.data(), p.data.data(), p.data.size()) != 0 ||
          std::memcmp(q.col_sum.data(), p.col_sum.data(), p.col_sum.size() * sizeof(int32_t)) != 0) {
        std::printf("pack_q8 K=%ld N=%ld: packed on the pool or from [N, K], other bytes\n", (long)K, (long)N);
        failures++;
      }
  }
  QActivations a{X.data(), sa.data(), zp.data()};
  a.uniform = uniform;  // (the VNNI epilogue then computes the row terms once)
  qgemm_q8(pool, M, a, p, bias.data(), -1e30f, 1e30f, C.data(), N);
  {  // with the output snapped to an int8 grid in the GEMM: exactly the snap of the plain result
    const Int8Grid grid{1.f / 0.05f, -131.f, 124.f, 0.05f};
    std::vector<float> S(M * N);
    qgemm_q8(pool, M, a, p, bias.data(), -1e30f, 1e30f, S.data(), N, &grid);
    for (int64_t i = 0; i < M * N; i++) {
      float t = C[i] * grid.inv;
      t = t < grid.lo ? grid.lo : t;
      t = t > grid.hi ? grid.hi : t;
      const float want = std::nearbyint(t) * grid.scale;
      if (S[i] != want && failures++ < 5)
        std::printf("qgemm snapped M=%ld N=%ld K=%ld [%ld]: %g != %g\n", (long)M, (long)N, (long)K, (long)i, S[i], want);
    }
    // ... or only its byte codes, into a wider output (ldc > N, the bytes between left alone):
    // exactly float_to_codes of the snapped result (signed codes: shift = zero point + 128)
    const int64_t ldc = N + 3;
    const int32_t shift = 131;  // grid.lo + shift = 0, grid.hi + shift = 255
    std::vector<uint8_t> codes(M * ldc, 7), want(N);
    QOutput out;
    out.codes = codes.data();
    out.ldc = ldc;
    out.grid = &grid;
    out.code_shift = shift;
    qgemm_q8(pool, M, a, p, bias.data(), -1e30f, 1e30f, out);
    for (int64_t m = 0; m < M; m++) {
      float_to_codes(S.data() + m * N, N, grid.inv, (float)shift, want.data());
      for (int64_t n = 0; n < ldc; n++) {
        const uint8_t w = n < N ? want[n] : 7;
        if (codes[m * ldc + n] != w && failures++ < 5)
          std::printf("qgemm codes M=%ld N=%ld K=%ld (%ld,%ld): %d != %d\n", (long)M, (long)N, (long)K, (long)m, (long)n,
                      codes[m * ldc + n], w);
      }
    }
  }
  {  // with an activation clamp as well (ReLU-like bounds, both inside the grid, one below it):
     // snapped and as codes, exactly those of the plain result clamped, then snapped
    const Int8Grid grid{1.f / 0.05f, -131.f, 124.f, 0.05f};
    const int32_t shift = 131;
    for (const std::array<float, 2>& lohi : {std::array<float, 2>{0.f, 1e30f}, std::array<float, 2>{-0.4f, 2.2f},
                                            std::array<float, 2>{-1e30f, -6.9f}}) {
      const float lo = lohi[0], hi = lohi[1];
      std::vector<float> S(M * N);
      std::vector<uint8_t> codes(M * N);
      qgemm_q8(pool, M, a, p, bias.data(), lo, hi, S.data(), N, &grid);
      QOutput out;
      out.codes = codes.data();
      out.ldc = N;
      out.grid = &grid;
      out.code_shift = shift;
      qgemm_q8(pool, M, a, p, bias.data(), lo, hi, out);
      for (int64_t i = 0; i < M * N; i++) {
        float t = std::fmin(std::fmax(C[i], lo), hi) * grid.inv;
        t = std::nearbyint(std::fmin(std::fmax(t, grid.lo), grid.hi));
        if ((S[i] != t * grid.scale || codes[i] != (uint8_t)(t + shift)) && failures++ < 5)
          std::printf("qgemm clamped [%g, %g] M=%ld N=%ld K=%ld [%ld]: %g / %d != %g / %d\n", lo, hi, (long)M, (long)N,
                      (long)K, (long)i, S[i], codes[i], t * grid.scale, (int)(t + shift));
      }
    }
  }
  {  // accumulating into C (blocks of K with scales of their own, qb4w): C + the result, then the clamp
    std::vector<float> P(M * N);
    for (auto& x : P) x = (u(rng) - 0.025f) * 100;
    std::vector<float> Acc = P;
    QOutput out;
    out.C = Acc.data();
    out.ldc = N;
    out.accumulate = true;
    qgemm_q8(pool, M, a, p, bias.data(), -1e30f, 1e30f, out);
    for (int64_t i = 0; i < M * N; i++) {
      const float want = P[i] + C[i];
      if (std::fabs(Acc[i] - want) > 1e-5f * (1 + std::fabs(want)) && failures++ < 5)
        std::printf("qgemm accumulate M=%ld N=%ld K=%ld [%ld]: %g != %g\n", (long)M, (long)N, (long)K, (long)i, Acc[i], want);
    }
  }
  {  // XNNPACK's static-int8 requantization (PackedQ8::bias_q, xnn_requant.cpp): the scales in grid
     // units, integer biases, activations' scale 1, no float bias, a grid of inv 1 - codes and grid
     // points exactly round(float(sum + bias_q) * scale) clamped (with a clamp in grid units too)
    PackedQ8 e = p;
    std::vector<int32_t> bq(N);
    std::uniform_int_distribution<int32_t> bi(-300000, 300000);
    for (auto& b : bq) b = bi(rng);
    for (int64_t n = 0; n < N; n++) e.scale[(size_t)n] = 0.02f * sw[n] / 0.05f;
    e.bias_q.assign(e.scale.size(), 0);
    for (int64_t n = 0; n < N; n++) e.bias_q[(size_t)n] = bq[n];
    std::vector<float> ones(M, 1.f);
    QActivations ea = a;
    ea.scale = ones.data();
    const Int8Grid grid{1.f, -131.f, 124.f, 0.05f};
    const int32_t shift = 131;
    for (const std::array<float, 2>& lohi : {std::array<float, 2>{-1e30f, 1e30f}, std::array<float, 2>{0.f, 100.5f}}) {
      std::vector<float> S(M * N);
      std::vector<uint8_t> codes(M * N);
      qgemm_q8(pool, M, ea, e, nullptr, lohi[0], lohi[1], S.data(), N, &grid);
      QOutput out;
      out.codes = codes.data();
      out.ldc = N;
      out.grid = &grid;
      out.code_shift = shift;
      qgemm_q8(pool, M, ea, e, nullptr, lohi[0], lohi[1], out);
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          int32_t acc = bq[n];
          for (int64_t k = 0; k < K; k++) acc += (xi[m * K + k] - zp[m]) * W[k * N + n];
          float t = (float)acc * e.scale[(size_t)n];
          t = std::fmin(std::fmax(t, std::fmax(lohi[0], grid.lo)), std::fmin(lohi[1], grid.hi));
          t = std::nearbyint(t);
          const int64_t i = m * N + n;
          if ((S[i] != t * grid.scale || codes[i] != (uint8_t)(t + shift)) && failures++ < 5)
            std::printf("qgemm int bias M=%ld N=%ld K=%ld (%ld,%ld): %g / %d != %g / %d\n", (long)M, (long)N, (long)K,
                        (long)m, (long)n, S[i], codes[i], t * grid.scale, (int)(t + shift));
        }
    }
  }
  if (!uniform) {  // dynamic int8 rows (qd8): XNNPACK's epilogue fma(acc * sa, sw, bias), bit for bit
    a.scale_rows_first = true;
    std::vector<float> D(M * N);
    qgemm_q8(pool, M, a, p, bias.data(), -1e30f, 1e30f, D.data(), N);
    a.scale_rows_first = false;
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        int32_t acc = 0;
        for (int64_t k = 0; k < K; k++) acc += (xi[m * K + k] - zp[m]) * W[k * N + n];
        const float t = (float)acc * sa[m];
        const float want = fma_exact(t, sw[n], bias[n]);
        if (D[m * N + n] != want && failures++ < 5)
          std::printf("qgemm qd8 epilogue M=%ld N=%ld K=%ld (%ld,%ld): %.9g != %.9g\n", (long)M, (long)N, (long)K, (long)m,
                      (long)n, D[m * N + n], want);
      }
  }
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; k++) acc += (int64_t)(xi[m * K + k] - zp[m]) * W[k * N + n];
      double want = (double)acc * sa[m] * sw[n] + bias[n];
      double got = C[m * N + n];
      if (std::fabs(want - got) > 1e-5 * (1 + std::fabs(want))) {
        if (failures++ < 5) std::printf("qgemm M=%ld N=%ld K=%ld (%ld,%ld): %g != %g\n", (long)M, (long)N, (long)K, (long)m, (long)n, got, want);
      }
    }
}

// The int8 GEMM reading its rows through tap pointers (a convolution on its input's codes) gives
// exactly the GEMM on the same rows unfolded: ragged rows and panels, runs of 4..24 bytes, an
// offset, runs shared between rows and a padding run. Where the CPU path has no indirect kernel
// it must say so and compute nothing.
static void check_qgemm_indirect(std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255), qw(-127, 127);
  std::uniform_real_distribution<float> u(0.001f, 0.05f);
  struct Case { int64_t M, N, taps, run; };
  for (const Case& cs : {Case{1, 8, 9, 8}, Case{13, 16, 9, 4}, Case{17, 24, 4, 12}, Case{40, 40, 9, 16}, Case{9, 70, 3, 24}}) {
    const int64_t K = cs.taps * cs.run, off = 5;
    std::vector<int8_t> W((size_t)(K * cs.N));
    for (auto& x : W) x = (int8_t)qw(rng);
    std::vector<float> sw((size_t)cs.N), bias((size_t)cs.N), sa((size_t)cs.M, u(rng));
    std::vector<int32_t> zp((size_t)cs.M, (int32_t)(code(rng) - 128));
    for (auto& v : sw) v = u(rng);
    for (auto& v : bias) v = u(rng) * 10;
    const PackedQ8 p = pack_q8(K, cs.N, W.data(), cs.N, 1, sw.data());
    // a pool of input runs (some shared), one of them the padding
    std::vector<std::vector<uint8_t>> pool((size_t)(cs.M * cs.taps / 2 + 2), std::vector<uint8_t>((size_t)(cs.run + off)));
    for (auto& r : pool)
      for (auto& v : r) v = (uint8_t)code(rng);
    std::vector<const uint8_t*> ptrs((size_t)(cs.M * cs.taps));
    std::vector<uint8_t> unfolded((size_t)(cs.M * p.Kp), 0);
    for (int64_t m = 0; m < cs.M; m++)
      for (int64_t t = 0; t < cs.taps; t++) {
        const uint8_t* r = pool[(size_t)(rng() % pool.size())].data();
        ptrs[(size_t)(m * cs.taps + t)] = r;
        std::memcpy(unfolded.data() + m * p.Kp + t * cs.run, r + off, (size_t)cs.run);
      }
    QActivations a{unfolded.data(), sa.data(), zp.data()};
    std::vector<float> want((size_t)(cs.M * cs.N)), got((size_t)(cs.M * cs.N), -7.f);
    qgemm_q8(nullptr, cs.M, a, p, bias.data(), -1e30f, 1e30f, want.data(), cs.N);
    QOutput out;
    out.C = got.data();
    out.ldc = cs.N;
    // (the panels in two calls: 0..1, 1..)
    const int64_t panels = (cs.N + 15) / 16;
    const bool ran = qgemm_q8_indirect(cs.M, ptrs.data(), cs.taps, off, 0, 1, a, p, bias.data(), -1e30f, 1e30f, out) &&
                     qgemm_q8_indirect(cs.M, ptrs.data(), cs.taps, off, 1, panels, a, p, bias.data(), -1e30f, 1e30f, out);
    if (ran != qgemm_q8_indirect_ok(p, cs.taps) && failures++ < 5) std::printf("qgemm_indirect: ran %d, ok says otherwise\n", ran);
    for (size_t i = 0; i < got.size(); i++)
      if ((ran ? got[i] != want[i] : got[i] != -7.f) && failures++ < 5)
        std::printf("qgemm_indirect M=%ld N=%ld taps=%ld run=%ld [%ld]: %g != %g\n", (long)cs.M, (long)cs.N, (long)cs.taps,
                    (long)cs.run, (long)i, got[i], ran ? want[i] : -7.f);
  }
}

// A grouped convolution's small groups several to a panel (qgemm_q8_grouped) give exactly each
// group's own GEMM (per-group packing, rows unfolded): 1..16 groups a panel, ragged last panels,
// 1..4 dwords of a tap's channels, shared and padding runs, uniform and per-row parameters, the
// panels in two calls. Where the CPU path has no such kernel it must say so and compute nothing.
static void check_qgemm_grouped(std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255), qw(-127, 127);
  std::uniform_real_distribution<float> u(0.001f, 0.05f);
  struct Case { int64_t G, ICg, OCg, taps, M; bool uniform; };
  for (const Case& cs : {Case{6, 8, 8, 9, 13, true}, Case{13, 8, 8, 9, 64, true}, Case{5, 4, 4, 9, 9, false},
                         Case{7, 16, 4, 1, 17, true}, Case{3, 4, 1, 4, 5, false}, Case{9, 8, 2, 9, 11, true},
                         Case{3, 32, 8, 2, 8, false}}) {
    const int64_t G = cs.G, ICg = cs.ICg, OCg = cs.OCg, taps = cs.taps, M = cs.M, C = G * ICg, N = G * OCg;
    const int64_t K = taps * ICg;
    std::vector<int8_t> W((size_t)(N * K));  // [N][taps][ICg]
    for (auto& x : W) x = (int8_t)qw(rng);
    std::vector<float> sw((size_t)N), bias((size_t)N), sa((size_t)M, u(rng));
    std::vector<int32_t> zp((size_t)M, (int32_t)(code(rng) - 128));
    if (!cs.uniform)
      for (int64_t m = 0; m < M; m++) sa[(size_t)m] = u(rng), zp[(size_t)m] = (int32_t)(code(rng) - 128);
    for (auto& v : sw) v = u(rng);
    for (auto& v : bias) v = u(rng) * 10;
    const PackedQ8 all = pack_q8(K, N, W.data(), 1, K, sw.data());
    // pixels of C channels (some shared by several rows), one of them the padding
    std::vector<std::vector<uint8_t>> pix((size_t)(M * taps / 2 + 2), std::vector<uint8_t>((size_t)C));
    for (auto& r : pix)
      for (auto& v : r) v = (uint8_t)code(rng);
    std::vector<const uint8_t*> ptrs((size_t)(M * taps));
    for (auto& q : ptrs) q = pix[(size_t)(rng() % pix.size())].data();
    QActivations a{nullptr, sa.data(), zp.data(), cs.uniform};
    std::vector<float> want((size_t)(M * N)), got((size_t)(M * N), -7.f);
    std::vector<uint8_t> rows((size_t)(M * K));
    for (int64_t g = 0; g < G; g++) {  // each group's GEMM on its unfolded rows
      const PackedQ8 pg = pack_q8(K, OCg, W.data() + g * OCg * K, 1, K, sw.data() + g * OCg);
      for (int64_t m = 0; m < M; m++)
        for (int64_t t = 0; t < taps; t++)
          std::memcpy(rows.data() + (m * taps + t) * ICg, ptrs[(size_t)(m * taps + t)] + g * ICg, (size_t)ICg);
      QActivations ag = a;
      ag.data = rows.data();
      if (pg.Kp != K) continue;  // (K is a multiple of 4 in every case)
      qgemm_q8(nullptr, M, ag, pg, bias.data() + g * OCg, -1e30f, 1e30f, want.data() + g * OCg, N);
    }
    QOutput out;
    out.C = got.data();
    out.ldc = N;
    const int64_t panels = (N + 15) / 16;
    const bool ran = qgemm_q8_grouped(M, ptrs.data(), taps, ICg, OCg, 0, 1, a, all, bias.data(), -1e30f, 1e30f, out) &&
                     qgemm_q8_grouped(M, ptrs.data(), taps, ICg, OCg, 1, panels, a, all, bias.data(), -1e30f, 1e30f, out);
    if (ran != qgemm_q8_grouped_ok(all, taps, ICg, OCg) && failures++ < 5)
      std::printf("qgemm_grouped: ran %d, ok says otherwise\n", ran);
    for (size_t i = 0; i < got.size(); i++)
      if ((ran ? got[i] != want[i] : got[i] != -7.f) && failures++ < 5)
        std::printf("qgemm_grouped G=%ld ICg=%ld OCg=%ld taps=%ld M=%ld [%ld]: %g != %g\n", (long)G, (long)ICg, (long)OCg,
                    (long)taps, (long)M, (long)i, got[i], ran ? want[i] : -7.f);
  }
}

// The thread pool: every index of [0, n) run exactly once for assorted sizes, grains and thread
// counts; a parallel_for inside a region runs inline; an exception thrown on the caller's share
// or on a worker's propagates from parallel_for after the region is closed, and the pool keeps working.
// The 2-D transpose (register blocks + edges) against the definition, whole and by row ranges.
// round_to_half / conversions (F16C, AVX-512 or scalar) against core/dtype.h's scalar rounding:
// ties, subnormals, the overflow threshold, infinities (NaN stays NaN)
static void check_half(std::mt19937& rng) {
  std::vector<float> x = {0.f, -0.f, 1.f, 65504.f, 65519.99f, 65520.f, -65520.f, 1e-8f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                          6.1e-5f, 1.0009765625f, 1.00048828125f, 1.00146484375f, INFINITY, -INFINITY, NAN};
  std::uniform_real_distribution<float> u(-70000.f, 70000.f), s(-1e-4f, 1e-4f);
  for (int i = 0; i < 4000; i++) x.push_back(i % 2 ? u(rng) : s(rng));
  std::vector<float> d(x.size());
  std::vector<uint16_t> h(x.size());
  round_to_half(x.data(), d.data(), (int64_t)x.size());
  float_to_half_n(x.data(), h.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); i++) {
    const float want = half_to_float(float_to_half(x[i]));
    const bool ok = std::isnan(want) ? std::isnan(d[i]) && std::isnan(half_to_float(h[i]))
                                     : want == d[i] && float_to_half(x[i]) == h[i];
    if (!ok && failures++ < 5) std::printf("round_to_half(%.9g) = %.9g (half %04x), want %.9g\n", x[i], d[i], h[i], want);
  }
  std::vector<float> back(x.size());
  half_to_float_n(h.data(), back.data(), (int64_t)h.size());
  for (size_t i = 0; i < x.size(); i++)
    if (!std::isnan(back[i]) && back[i] != half_to_float(h[i]) && failures++ < 5) std::printf("half_to_float_n mismatch at %zu\n", i);
}

static void check_transpose() {
  for (int64_t R : {1, 2, 3, 4, 6, 7, 8, 9, 16, 33, 70, 300})
    for (int64_t S : {1, 2, 3, 4, 5, 7, 8, 15, 32, 41, 100, 300}) {
      std::vector<float> x((size_t)(R * S)), y((size_t)(R * S), -1.f);
      for (size_t i = 0; i < x.size(); i++) x[i] = (float)i;
      const int64_t mid = S / 3, rmid = R / 2;  // by row ranges, and by column ranges too
      transpose_2d_f32(x.data(), R, S, y.data(), 0, mid, 0, R);
      transpose_2d_f32(x.data(), R, S, y.data(), mid, S, 0, rmid);
      transpose_2d_f32(x.data(), R, S, y.data(), mid, S, rmid, R);
      for (int64_t s = 0; s < S; s++)
        for (int64_t r = 0; r < R; r++)
          if (y[(size_t)(s * R + r)] != x[(size_t)(r * S + s)] && failures++ < 5)
            std::printf("transpose R=%ld S=%ld: (%ld,%ld) wrong\n", (long)R, (long)S, (long)s, (long)r);
    }
}

// the byte transpose (int8 values kept as codes) against the naive loop, odd sizes, split ranges
static void check_transpose_u8() {
  for (int64_t R : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 58, 70, 300})
    for (int64_t S : {1, 3, 7, 8, 9, 16, 17, 33, 64, 100, 300}) {
      std::vector<uint8_t> x((size_t)(R * S)), y((size_t)(R * S), 0xAB);
      for (size_t i = 0; i < x.size(); i++) x[i] = (uint8_t)(i * 7 + i / 251);
      const int64_t mid = S / 3, rmid = R / 2;
      transpose_2d_u8(x.data(), R, S, y.data(), 0, mid, 0, R);
      transpose_2d_u8(x.data(), R, S, y.data(), mid, S, 0, rmid);
      transpose_2d_u8(x.data(), R, S, y.data(), mid, S, rmid, R);
      for (int64_t s = 0; s < S; s++)
        for (int64_t r = 0; r < R; r++)
          if (y[(size_t)(s * R + r)] != x[(size_t)(r * S + s)] && failures++ < 5)
            std::printf("transpose_u8 R=%ld S=%ld: (%ld,%ld) wrong\n", (long)R, (long)S, (long)s, (long)r);
    }
}

// Byte codes of grid values (static-int8 convolution inputs) against the definition: every
// length's tail, values off the grid, out of range, halves (nearest even) and NaN.
static void check_codes(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-200.f, 200.f);
  for (int64_t n : {0, 1, 7, 15, 16, 17, 33, 50, 100}) {  // (50: 32 on AVX-512, then 16 on AVX2)
    std::vector<float> x((size_t)n);
    for (int64_t i = 0; i < n; i++) {
      const int kind = (int)(i % 5);
      x[(size_t)i] = kind == 0 ? std::nanf("") : kind == 1 ? (float)(int)u(rng) * 0.5f : u(rng) * 0.05f;
    }
    const float inv = 4.f, shift = 131.f;
    std::vector<uint8_t> got((size_t)n);
    float_to_codes(x.data(), n, inv, shift, got.data());
    for (int64_t i = 0; i < n; i++) {
      double t = std::fma((double)x[(size_t)i], inv, shift);  // exact here: x * 4 + 131
      t = t > 0 ? (t < 255 ? t : 255) : 0;
      const int want = (int)std::nearbyint(t);
      if (got[(size_t)i] != want && failures++ < 5)
        std::printf("codes n=%ld i=%ld x=%g: %d != %d\n", (long)n, (long)i, x[(size_t)i], got[(size_t)i], want);
    }
    // grid_codes (the portable kernels' rows of codes) against grid_code, on grids whose codes are
    // all bytes (signed, unsigned) and one whose shift pushes codes past 255 (the clamped loop);
    // with infinities and halves of the grid's step (nearest even: odd and even shifts)
    std::vector<float> y(x);
    for (int64_t i = 0; i < n; i += 7) y[(size_t)i] = i % 2 ? INFINITY : -INFINITY;
    for (const Int8Grid g : {Int8Grid{8.f, -128.f, 127.f, 0.125f}, Int8Grid{8.f, -3.f, 252.f, 0.125f},
                             Int8Grid{0.5f, -128.f, 127.f, 2.f}})
      for (const int32_t shift : {128, 3, 131, 200}) {
        std::vector<uint8_t> c((size_t)n);
        grid_codes(g, shift, y.data(), c.data(), n);
        for (int64_t i = 0; i < n; i++)
          if (c[(size_t)i] != grid_code(y[(size_t)i], g, shift) && failures++ < 5)
            std::printf("grid_codes shift %d x=%g: %d != %d\n", (int)shift, y[(size_t)i], c[(size_t)i],
                        grid_code(y[(size_t)i], g, shift));
      }
    // codes_to_floats (codes back to grid points) against the formula, every byte value
    std::vector<uint8_t> c((size_t)n);
    std::vector<float> back((size_t)n);
    for (int64_t i = 0; i < n; i++) c[(size_t)i] = (uint8_t)(i * 37 + 255 * (i % 2));
    for (const int32_t shift : {0, 128, 131})
      for (const float scale : {0.125f, 0.0371f}) {
        codes_to_floats(c.data(), n, shift, scale, back.data());
        for (int64_t i = 0; i < n; i++)
          if (back[(size_t)i] != (float)((int32_t)c[(size_t)i] - shift) * scale && failures++ < 5)
            std::printf("codes_to_floats code %d shift %d: %g\n", (int)c[(size_t)i], (int)shift, back[(size_t)i]);
      }
  }
}

// Dynamic int8 quantization of a row (qd8 activations) against XNNPACK's float32 definition
// (quantize_row.h): the parameters from min(0, mn) and max(0, mx) - m = 255 / (max - min), the
// zero point of the end with the smaller error, scale 1 / m - and the codes round_half_even(x * m
// rounded to float) clamped, on every path: products that are exactly half-integers, NaN, every
// tail length, rows of one sign.
static void check_quantize_row(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (const float lo : {-3.f, -0.7f, 0.f, 0.25f})
    for (const float hi : {3.f, 0.3f, 1.f / 255, -0.1f})
      for (const int64_t extra : {0, 1, 7, 15, 31}) {
        std::vector<float> x{lo, hi};
        float mn = 0.f, mx = 0.f;
        row_min_max(x.data(), 2, mn, mx);
        if (mn == mx) continue;
        const Qd8Params p = qd8_params(mn, mx);
        const float rmin = std::min(0.f, std::min(lo, hi)), rmax = std::max(0.f, std::max(lo, hi));
        const float m = 255.f / (rmax - rmin);
        if (p.mult != m || p.scale != 1.f / m || p.zp < -128 || p.zp > 127) {
          if (failures++ < 5) std::printf("qd8_params [%g, %g]: %g %g %d\n", lo, hi, p.mult, p.scale, p.zp);
          continue;
        }
        for (int k = -140; k < 140; k++) {  // (k + 1/2) / m: x * m a half-integer where it rounds to one
          const float v = (float)(k + 0.5) / m;
          if (v >= rmin && v <= rmax) x.push_back(v);
        }
        for (int k = 0; k < 100 + extra; k++) x.push_back(rmin + (rmax - rmin) * (u(rng) + 3.f) / 6.f);
        x.push_back(std::nanf(""));
        std::shuffle(x.begin(), x.end(), rng);
        const int64_t n = (int64_t)x.size();
        std::vector<float> grid((size_t)n);
        std::vector<uint8_t> q((size_t)n);
        quantize_row_q8(x.data(), n, p, grid.data(), q.data());
        for (int64_t i = 0; i < n; i++) {
          float t = x[(size_t)i] * p.mult;
          t = t < (float)(-128 - p.zp) ? (float)(-128 - p.zp) : t;
          t = t > (float)(127 - p.zp) ? (float)(127 - p.zp) : t;
          t = std::nearbyint(t);
          const float want_grid = t * p.scale;
          const int want_q = t == t ? (int)t + p.zp + 128 : 0;
          const bool same_grid = grid[(size_t)i] == want_grid || (want_grid != want_grid && grid[(size_t)i] != grid[(size_t)i]);
          if ((!same_grid || q[(size_t)i] != want_q) && failures++ < 5)
            std::printf("quantize_row [%g, %g] x=%.9g: %d (%g) != %d (%g)\n", lo, hi, x[(size_t)i], q[(size_t)i],
                        grid[(size_t)i], want_q, want_grid);
        }
      }
}

// Table lookup of values on an int8 grid (unary functions of static-int8 values): every grid point
// of a signed and an unsigned grid, in every position of the vector loop, and NaN, read the table
// entry of their grid index (table[t - lo], NaN table[256]).
// snap_to_grid over arrays (AVX2) against its scalar formula, bit for bit: wide and half-way
// values, the clamps, NaN and infinities, every tail length.
// column_sums_f64 (global average pooling) against row-order double sums, bit for bit
static void check_column_sums(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  for (int64_t rows : {1, 3, 49, 200})
    for (int64_t n : {1, 3, 4, 7, 16, 21, 40}) {
      const int64_t stride = n + (rows % 2) * 5;
      std::vector<float> x((size_t)(rows * stride));
      for (auto& v : x) v = u(rng);
      std::vector<double> got((size_t)n, -1.0);
      column_sums_f64(x.data(), rows, stride, n, got.data());
      for (int64_t c = 0; c < n; c++) {
        double want = 0.0;
        for (int64_t p = 0; p < rows; p++) want += x[(size_t)(p * stride + c)];
        if (got[(size_t)c] != want && failures++ < 5)
          std::printf("column_sums rows=%ld n=%ld column %ld: %.17g != %.17g\n", (long)rows, (long)n, (long)c,
                      got[(size_t)c], want);
      }
    }
}

// row_sums_f64 (NCHW global average pooling, row sums / means) against its scalar formula (8 double
// lanes, the lanes' tree, the tail in order), bit for bit: every row count up to the 4-row blocks
// and past them, lengths around the 8-lane steps, a row stride beyond the length
static void check_row_sums(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  for (int64_t rows : {1, 2, 3, 4, 5, 9})
    for (int64_t len : {0, 1, 7, 8, 9, 16, 49, 63, 200}) {
      const int64_t stride = len + 3;
      std::vector<float> x((size_t)(rows * stride));
      for (auto& v : x) v = u(rng);
      std::vector<double> got((size_t)rows, -1.0);
      row_sums_f64(x.data(), rows, len, stride, got.data());
      for (int64_t r = 0; r < rows; r++) {
        const float* row = x.data() + r * stride;
        double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + 8 <= len; j += 8)
          for (int l = 0; l < 8; l++) lane[l] += row[j + l];
        double want = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
        for (; j < len; j++) want += row[j];
        if (got[(size_t)r] != want && failures++ < 5)
          std::printf("row_sums rows=%ld len=%ld row %ld: %.17g != %.17g\n", (long)rows, (long)len, (long)r,
                      got[(size_t)r], want);
      }
    }
  // row_sums_sequential_f32 (ExecuTorch's mean order): each row's float32 adds in order, from its
  // first element (not 0 + it: a row of one -0 sums to -0), across the 8-row and 256-column blocks
  for (int64_t rows : {1, 3, 8, 9, 17})
    for (int64_t len : {0, 1, 7, 8, 255, 256, 257, 600}) {  // (len 1: row 1 is just its -0)
      const int64_t stride = len + 5;
      std::vector<float> x((size_t)(rows * stride));
      for (auto& v : x) v = u(rng) * (u(rng) > 90.f ? 1e5f : 1.f);  // (magnitudes apart: order matters)
      if (len && rows > 1) x[(size_t)stride] = -0.f;  // (row 1 starts at -0)
      std::vector<float> got((size_t)rows, -1.f);
      row_sums_sequential_f32(x.data(), rows, len, stride, got.data());
      for (int64_t r = 0; r < rows; r++) {
        const float* row = x.data() + r * stride;
        float want = len ? row[0] : 0.f;
        for (int64_t j = 1; j < len; j++) want += row[j];
        if (std::memcmp(&got[(size_t)r], &want, 4) != 0 && failures++ < 5)
          std::printf("row_sums_sequential_f32 rows=%ld len=%ld row %ld: %.9g != %.9g\n", (long)rows, (long)len,
                      (long)r, got[(size_t)r], want);
      }
    }
}

// code_row_sums / code_column_sums (global average pooling of int8 codes) against plain integer
// sums: lengths around the 16-byte steps (the masked last step), bytes up to 255, strides beyond
// the length, column counts past the 256-column blocks
static void check_code_sums(std::mt19937& rng) {
  std::uniform_int_distribution<int> u(0, 255);
  for (int64_t rows : {1, 2, 5})
    for (int64_t len : {0, 1, 15, 16, 17, 31, 32, 33, 49, 64, 100, 300}) {
      const int64_t stride = len + 5;
      std::vector<uint8_t> x((size_t)(rows * stride));
      for (size_t i = 0; i < x.size(); i++) x[i] = i % 7 == 0 ? 255 : (uint8_t)u(rng);
      std::vector<int64_t> got((size_t)rows, -1);
      code_row_sums(x.data(), rows, len, stride, got.data());
      for (int64_t r = 0; r < rows; r++) {
        int64_t want = 0;
        for (int64_t j = 0; j < len; j++) want += x[(size_t)(r * stride + j)];
        if (got[(size_t)r] != want && failures++ < 5)
          std::printf("code_row_sums rows=%ld len=%ld row %ld: %ld != %ld\n", (long)rows, (long)len, (long)r,
                      (long)got[(size_t)r], (long)want);
      }
    }
  for (int64_t rows : {1, 3, 49, 300})
    for (int64_t n : {1, 7, 16, 255, 256, 257, 300}) {
      const int64_t stride = n + 3;
      std::vector<uint8_t> x((size_t)(rows * stride));
      for (size_t i = 0; i < x.size(); i++) x[i] = i % 5 == 0 ? 255 : (uint8_t)u(rng);
      std::vector<int64_t> got((size_t)n, -1);
      code_column_sums(x.data(), rows, stride, n, got.data());
      for (int64_t c = 0; c < n; c++) {
        int64_t want = 0;
        for (int64_t p = 0; p < rows; p++) want += x[(size_t)(p * stride + c)];
        if (got[(size_t)c] != want && failures++ < 5)
          std::printf("code_column_sums rows=%ld n=%ld column %ld: %ld != %ld\n", (long)rows, (long)n, (long)c,
                      (long)got[(size_t)c], (long)want);
      }
    }
}

// row_extreme_index against a sequential scan keeping the first (its first NaN wins): rows of
// ties, signed zeros, infinities and NaNs, every tail length
static void check_row_extreme(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 9);
  const float special[] = {0.f, -0.f, 1.f, -1.f, INFINITY, -INFINITY, NAN, 3.f, 3.f, -3.f};
  for (int64_t n = 1; n <= 70; n++)
    for (int rep = 0; rep < 40; rep++)
      for (bool mx : {true, false}) {
        std::vector<float> x((size_t)n);
        for (auto& v : x) v = special[pick(rng)];
        if (rep % 2) x[(size_t)(rep % n)] = special[rep % 10];
        if (rep % 3 == 0)
          for (auto& v : x)
            if (v != v) v = 2.f;  // (rows without NaN too)
        int64_t want = 0;
        for (int64_t i = 1; i < n; i++) {
          const float a = x[(size_t)i], b = x[(size_t)want];
          if (b != b) break;
          if (a != a || (mx ? a > b : a < b)) want = i;
        }
        const int64_t got = row_extreme_index(x.data(), n, mx);
        if (got != want && failures++ < 5)
          std::printf("row_extreme n=%ld %s: index %ld, want %ld\n", (long)n, mx ? "max" : "min", (long)got, (long)want);
      }
}

static void check_snap(std::mt19937& rng) {
  const Int8Grid g{1.f / 0.037f, -128.f - 3.f, 127.f - 3.f, 0.037f};
  std::uniform_real_distribution<float> wide(-8.f, 8.f);
  std::vector<float> x;
  for (int i = 0; i < 5000; i++) x.push_back(i % 4 == 0 ? ((float)(i % 300) - 150.f + 0.5f) * 0.037f : wide(rng));
  for (float v : {0.f, -0.f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN}) x.push_back(v);
  for (size_t len = 0; len <= 40; len++) {
    const size_t n = len < 40 ? len : x.size();
    std::vector<float> y(n, -7.f);
    snap_to_grid(g, x.data(), y.data(), (int64_t)n);
    for (size_t i = 0; i < n; i++) {
      const float want = snap_to_grid(x[i], g);
      if (std::memcmp(&want, &y[i], 4) != 0 && !(want != want && y[i] != y[i]) && failures++ < 5)
        std::printf("snap_to_grid(%g) = %g, want %g\n", x[i], y[i], want);
    }
  }
}

static void check_grid_lookup(std::mt19937& rng) {
  for (const Int8Grid g : {Int8Grid{1.f / 0.0371f, -128.f - 3.f, 127.f - 3.f, 0.0371f},
                           Int8Grid{1.f / 0.5f, 0.f - 200.f, 255.f - 200.f, 0.5f}}) {
    float table[257];
    for (int t = 0; t < 257; t++) table[t] = (float)(t * 7 + 1);
    std::vector<float> x;
    for (int t = 0; t < 256; t++) x.push_back((g.lo + (float)t) * g.scale);  // as snap_to_grid writes them
    x.push_back(std::nanf(""));
    std::shuffle(x.begin(), x.end(), rng);
    for (int64_t n : {(int64_t)x.size(), (int64_t)1, (int64_t)15, (int64_t)33}) {
      std::vector<float> y((size_t)n, -1.f);
      grid_table_lookup(g, table, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; i++) {
        const float v = x[(size_t)i];
        const int idx = v != v ? 256 : (int)std::nearbyint(v / g.scale) - (int)g.lo;
        if (y[(size_t)i] != table[idx] && failures++ < 5)
          std::printf("grid lookup x=%g: %g != %g\n", v, y[(size_t)i], table[idx]);
      }
    }
  }
}

// Depthwise convolution (NHWC, every CPU path's register-blocked interior and per-pixel borders)
// against the definition, with padding, strides, dilation and channel counts off the vector widths.
static void check_depthwise(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case { int64_t H, W, C, K, s, d, p; };
  const Case cases[] = {{9, 11, 8, 3, 1, 1, 1}, {10, 10, 13, 3, 2, 1, 1}, {12, 9, 37, 5, 1, 1, 2}, {11, 13, 20, 5, 2, 1, 2},
                        {8, 8, 4, 3, 1, 2, 2}, {7, 16, 33, 3, 1, 1, 0}, {6, 6, 3, 5, 1, 1, 0}, {14, 14, 64, 3, 2, 1, 1},
                        {9, 40, 4, 3, 1, 1, 1}, {8, 37, 6, 3, 1, 1, 1}, {5, 21, 12, 5, 1, 1, 2}, {6, 19, 36, 3, 1, 1, 1},
                        {3, 3, 2, 3, 1, 1, 1}, {7, 1, 5, 3, 1, 1, 1}};
  for (const Case& cs : cases)
    for (bool with_bias : {true, false}) {
      DepthwiseGeom g{2, cs.H, cs.W, cs.C, 0, 0, cs.K, cs.K, cs.s, cs.s, cs.d, cs.d, cs.p, cs.p, -0.7f, 0.9f};
      g.OH = (cs.H + 2 * cs.p - cs.d * (cs.K - 1) - 1) / cs.s + 1;
      g.OW = (cs.W + 2 * cs.p - cs.d * (cs.K - 1) - 1) / cs.s + 1;
      std::vector<float> x((size_t)(g.N * cs.H * cs.W * cs.C)), w((size_t)(cs.K * cs.K * cs.C)), b((size_t)cs.C);
      for (auto& v : x) v = u(rng);
      for (auto& v : w) v = u(rng);
      for (auto& v : b) v = u(rng);
      std::vector<float> y((size_t)(g.N * g.OH * g.OW * cs.C), NAN);
      depthwise_nhwc_f32(g, x.data(), w.data(), with_bias ? b.data() : nullptr, y.data(), 0, g.N * g.OH);
      for (int64_t n = 0; n < g.N; n++)
        for (int64_t oh = 0; oh < g.OH; oh++)
          for (int64_t ow = 0; ow < g.OW; ow++)
            for (int64_t c = 0; c < cs.C; c++) {
              double want = with_bias ? b[(size_t)c] : 0.0;
              for (int64_t i = 0; i < cs.K; i++)
                for (int64_t j = 0; j < cs.K; j++) {
                  const int64_t ih = oh * cs.s - cs.p + i * cs.d, iw = ow * cs.s - cs.p + j * cs.d;
                  if (ih >= 0 && ih < cs.H && iw >= 0 && iw < cs.W)
                    want += (double)x[(size_t)(((n * cs.H + ih) * cs.W + iw) * cs.C + c)] * w[(size_t)((i * cs.K + j) * cs.C + c)];
                }
              want = std::min(std::max(want, (double)g.lo), (double)g.hi);
              const float got = y[(size_t)(((n * g.OH + oh) * g.OW + ow) * cs.C + c)];
              if (!(std::fabs(got - want) <= 1e-5) && failures++ < 5)
                std::printf("depthwise H=%ld W=%ld C=%ld K=%ld s=%ld d=%ld p=%ld (%ld,%ld,%ld,%ld): %g != %g\n", (long)cs.H,
                            (long)cs.W, (long)cs.C, (long)cs.K, (long)cs.s, (long)cs.d, (long)cs.p, (long)n, (long)oh,
                            (long)ow, (long)c, got, want);
            }
    }
}

// The int8 depthwise convolution (codes in; float32, snapped or codes out) against exact integer
// sums over the taps inside the input: shapes that take the 4-pixel window paths (3x3 / 5x5,
// strides 1 and 2), the 4-pixel and one-pixel paths (64-channel steps, ragged channel tails),
// dilation; the snapped output is the snap of the plain one and the codes are its codes.
static void check_depthwise_q8(std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255), qw(-128, 127);
  std::uniform_real_distribution<float> u(0.001f, 0.02f);
  struct Case { int64_t H, W, C, K, s, d, p; };
  const Case cases[] = {{9, 11, 8, 3, 1, 1, 1}, {10, 10, 13, 3, 2, 1, 1}, {12, 9, 37, 5, 1, 1, 2}, {11, 13, 20, 5, 2, 1, 2},
                        {8, 8, 4, 3, 1, 2, 2}, {7, 16, 33, 3, 1, 1, 0}, {6, 6, 3, 5, 1, 1, 0}, {14, 14, 64, 3, 2, 1, 1},
                        {9, 40, 4, 3, 1, 1, 1}, {5, 21, 130, 5, 1, 1, 2}, {6, 19, 70, 3, 1, 1, 1}, {4, 4, 96, 5, 1, 1, 2},
                        {3, 3, 2, 3, 1, 1, 1}, {7, 1, 5, 3, 1, 1, 1}, {9, 17, 24, 3, 2, 1, 0}, {5, 12, 16, 1, 1, 1, 0}};
  for (const Case& cs : cases)
    for (bool with_bias : {true, false}) {
      DepthwiseGeom g{2, cs.H, cs.W, cs.C, 0, 0, cs.K, cs.K, cs.s, cs.s, cs.d, cs.d, cs.p, cs.p, -0.7f, 0.9f};
      g.OH = (cs.H + 2 * cs.p - cs.d * (cs.K - 1) - 1) / cs.s + 1;
      g.OW = (cs.W + 2 * cs.p - cs.d * (cs.K - 1) - 1) / cs.s + 1;
      const int64_t n_in = g.N * cs.H * cs.W * cs.C, n_out = g.N * g.OH * g.OW * cs.C, T = cs.K * cs.K;
      std::vector<uint8_t> x((size_t)(n_in + kDwQ8CodeSlack));
      std::vector<int8_t> w((size_t)(T * cs.C));
      std::vector<float> sw((size_t)cs.C), b((size_t)cs.C);
      for (auto& v : x) v = (uint8_t)code(rng);
      for (auto& v : w) v = (int8_t)qw(rng);
      for (auto& v : sw) v = u(rng);
      for (auto& v : b) v = (u(rng) - 0.01f) * 20;
      DwQ8Input in;
      in.codes = x.data();
      in.scale = u(rng);
      in.pad_code = code(rng);
      const PackedDwQ8 pw = pack_dw_q8(T, cs.C, w.data(), sw.data());
      const float* bias = with_bias ? b.data() : nullptr;
      std::vector<float> y((size_t)n_out, NAN), snapped((size_t)n_out, NAN);
      std::vector<uint8_t> codes((size_t)n_out, 7), want_codes((size_t)n_out);
      const Int8Grid grid{1.f / 0.01f, -100.f, 120.f, 0.01f};
      QOutput out;
      out.C = y.data();
      out.ldc = cs.C;
      depthwise_q8(g, in, pw, bias, out, 0, g.N * g.OH);
      out.C = snapped.data();
      out.grid = &grid;
      depthwise_q8(g, in, pw, bias, out, 0, g.N * g.OH / 2);  // in two row ranges
      depthwise_q8(g, in, pw, bias, out, g.N * g.OH / 2, g.N * g.OH);
      out.C = nullptr;
      out.codes = codes.data();
      out.code_shift = 100;
      depthwise_q8(g, in, pw, bias, out, 0, g.N * g.OH);
      float_to_codes(snapped.data(), n_out, grid.inv, 100.f, want_codes.data());
      PackedDwQ8 pe = pw;  // (as xnn_requant.cpp plans it)
      std::vector<int32_t> eq((size_t)cs.C);
      std::uniform_int_distribution<int32_t> bi(-50000, 50000);
      for (auto& v : eq) v = bi(rng);
      pe.bias_q.assign(pe.scale.size(), 0);
      for (int64_t c = 0; c < cs.C; c++) pe.scale[(size_t)c] = in.scale * sw[(size_t)c] / grid.scale, pe.bias_q[(size_t)c] = eq[(size_t)c];
      std::vector<uint8_t> exact((size_t)n_out, 7);
      {
        DwQ8Input ein = in;
        ein.scale = 1.f;
        DepthwiseGeom eg = g;
        eg.lo = g.lo / grid.scale, eg.hi = g.hi / grid.scale;
        const Int8Grid unit{1.f, grid.lo, grid.hi, grid.scale};
        QOutput eo;
        eo.codes = exact.data();
        eo.ldc = cs.C;
        eo.grid = &unit;
        eo.code_shift = 100;
        depthwise_q8(eg, ein, pe, nullptr, eo, 0, g.N * g.OH);
      }
      for (int64_t n = 0; n < g.N; n++)
        for (int64_t oh = 0; oh < g.OH; oh++)
          for (int64_t ow = 0; ow < g.OW; ow++)
            for (int64_t c = 0; c < cs.C; c++) {
              int64_t acc = 0;
              for (int64_t i = 0; i < cs.K; i++)
                for (int64_t j = 0; j < cs.K; j++) {
                  const int64_t ih = oh * cs.s - cs.p + i * cs.d, iw = ow * cs.s - cs.p + j * cs.d;
                  if (ih >= 0 && ih < cs.H && iw >= 0 && iw < cs.W)
                    acc += ((int64_t)x[(size_t)(((n * cs.H + ih) * cs.W + iw) * cs.C + c)] - in.pad_code) *
                           w[(size_t)((i * cs.K + j) * cs.C + c)];
                }
              double want = (double)acc * in.scale * sw[(size_t)c] + (with_bias ? b[(size_t)c] : 0.0);
              want = std::min(std::max(want, (double)g.lo), (double)g.hi);
              const size_t at = (size_t)(((n * g.OH + oh) * g.OW + ow) * cs.C + c);
              const float snap = snap_to_grid(y[at], grid);
              // XNNPACK's requantization (PackedDwQ8::bias_q): float(sum + bias_q) * scale in grid
              // units, rounded - the code exactly (sx 1, scales sx * sw / grid scale, no float bias)
              float t = (float)(int32_t)(acc + eq[c]) * pe.scale[(size_t)c];
              t = std::nearbyint(std::fmin(std::fmax(t, std::fmax(g.lo / grid.scale, grid.lo)), std::fmin(g.hi / grid.scale, grid.hi)));
              if ((!(std::fabs(y[at] - want) <= 1e-5 * (1 + std::fabs(want))) || snapped[at] != snap ||
                   codes[at] != want_codes[at] || exact[at] != (uint8_t)(t + 100.f)) &&
                  failures++ < 5)
                std::printf("depthwise_q8 H=%ld W=%ld C=%ld K=%ld s=%ld d=%ld p=%ld (%ld,%ld,%ld,%ld): %g (snapped %g, code %d) != %g (%g, %d)\n",
                            (long)cs.H, (long)cs.W, (long)cs.C, (long)cs.K, (long)cs.s, (long)cs.d, (long)cs.p, (long)n,
                            (long)oh, (long)ow, (long)c, y[at], snapped[at], codes[at], want, snap, want_codes[at]);
            }
    }
}

// broadcast_binary against index arithmetic: random shapes (size-1 dims, missing leading dims),
// both orders, 1 and 2 threads; finish() must cover every output element exactly once.
static void check_broadcast(std::mt19937& rng) {
  ThreadPool two(2);
  const int64_t sizes[] = {1, 2, 3, 5, 16, 17, 70};
  auto run = [&](const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, const std::vector<int64_t>& so, ThreadPool* pool) {
    int64_t na = 1, nb = 1, no = 1;
    for (auto d : sa) na *= d;
    for (auto d : sb) nb *= d;
    for (auto d : so) no *= d;
    std::vector<float> a((size_t)na), b((size_t)nb), z((size_t)no, -1.f);
    std::vector<int> fin((size_t)no, 0);
    for (int64_t i = 0; i < na; i++) a[(size_t)i] = (float)i;
    for (int64_t i = 0; i < nb; i++) b[(size_t)i] = (float)i;
    BroadcastPlan p;
    if (!plan_broadcast(sa, sb, so, p)) {
      if (failures++ < 5) std::printf("broadcast: a plan was refused\n");
      return;
    }
    broadcast_binary(pool, p, a.data(), b.data(), z.data(), [](float x, float y) { return x * 4096.f + y; },
                     [&](float* w, int64_t n) {
                       for (int64_t i = 0; i < n; i++) fin[(size_t)(w - z.data() + i)]++;
                     });
    const size_t r = so.size();
    for (int64_t o = 0; o < no; o++) {
      int64_t rem = o, ia = 0, ib = 0, ma = 1, mb = 1;
      for (size_t k = r; k-- > 0;) {
        const int64_t i = rem % so[k];
        rem /= so[k];
        const size_t ka = k + sa.size() - r, kb = k + sb.size() - r;  // (aligned from the right)
        if (k + sa.size() >= r) { ia += (sa[ka] == 1 ? 0 : i) * ma; ma *= sa[ka]; }
        if (k + sb.size() >= r) { ib += (sb[kb] == 1 ? 0 : i) * mb; mb *= sb[kb]; }
      }
      const float want = (float)ia * 4096.f + (float)ib;
      if ((z[(size_t)o] != want || fin[(size_t)o] != 1) && failures++ < 5) {
        std::printf("broadcast: rank %zu element %lld: %g (finished %d times), want %g\n", r, (long long)o,
                    z[(size_t)o], fin[(size_t)o], want);
        return;
      }
    }
  };
  for (int t = 0; t < 400; t++) {
    const size_t rank = 1 + rng() % 4;
    std::vector<int64_t> so(rank), sa, sb;
    for (auto& d : so) d = sizes[rng() % 7];
    const size_t ra = rank - rng() % rank, rb = rank - (t % 2 ? 0 : rng() % rank);
    for (size_t k = rank - ra; k < rank; k++) sa.push_back(rng() % 3 == 0 ? 1 : so[k]);
    for (size_t k = rank - rb; k < rank; k++) sb.push_back(rng() % 3 == 0 ? 1 : so[k]);
    for (size_t k = 0; k < rank; k++) {  // the output is what they broadcast to
      int64_t d = 1;
      if (k + sa.size() >= rank) d = std::max(d, sa[k + sa.size() - rank]);
      if (k + sb.size() >= rank) d = std::max(d, sb[k + sb.size() - rank]);
      so[k] = d;
    }
    run(sa, sb, so, (t & 2) ? &two : nullptr);
  }
  // the threaded and long-row paths: per-channel rows, one long row in pieces, an outer broadcast
  run({300, 64}, {64}, {300, 64}, &two);
  run({64}, {3000, 64}, {3000, 64}, &two);
  run({1, 200000}, {1, 200000}, {1, 200000}, &two);
  run({40, 3000, 1}, {40, 1, 7}, {40, 3000, 7}, &two);
}

// window_max / window_mean against the scalar formulas (tap order, NaN passed over by max)
static void check_window_reduce(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  for (int64_t C : {1, 7, 8, 9, 15, 16, 23, 24, 40, 58}) {
    for (int64_t taps = 0; taps <= 9; taps++) {
      std::vector<std::vector<float>> rows((size_t)taps, std::vector<float>((size_t)C));
      std::vector<const float*> x;
      for (auto& r : rows) {
        for (auto& v : r) v = (rng() % 7 == 0) ? NAN : (rng() % 5 == 0 ? -INFINITY : u(rng));
        x.push_back(r.data());
      }
      std::vector<float> mx((size_t)C), mean((size_t)C);
      window_max(x.data(), taps, C, mx.data());
      const float d = (float)std::max<int64_t>(taps, 1);
      window_mean(x.data(), taps, C, d, mean.data());
      for (int64_t c = 0; c < C; c++) {
        float m = -INFINITY, s = 0.f;
        for (int64_t t = 0; t < taps; t++) {
          m = x[(size_t)t][c] > m ? x[(size_t)t][c] : m;
          s += x[(size_t)t][c];
        }
        s /= d;
        const bool same_mean = std::memcmp(&s, &mean[(size_t)c], 4) == 0 || (s != s && mean[(size_t)c] != mean[(size_t)c]);
        if ((std::memcmp(&m, &mx[(size_t)c], 4) != 0 || !same_mean) && failures++ < 5)
          std::printf("window C=%ld taps=%ld [%ld]: max %g != %g or mean %g != %g\n", (long)C, (long)taps, (long)c,
                      mx[(size_t)c], m, mean[(size_t)c], s);
      }
      // the byte-code max (int8 values kept as codes) over the same number of taps
      std::vector<std::vector<uint8_t>> crows((size_t)taps, std::vector<uint8_t>((size_t)C));
      std::vector<const uint8_t*> cx;
      for (auto& r : crows) {
        for (auto& v : r) v = (uint8_t)(rng() % 256);
        cx.push_back(r.data());
      }
      std::vector<uint8_t> cm((size_t)C, 77);
      window_max_u8(cx.data(), taps, C, cm.data());
      for (int64_t c = 0; c < C; c++) {
        uint8_t want = 0;
        for (int64_t t = 0; t < taps; t++) want = std::max(want, cx[(size_t)t][c]);
        if (cm[(size_t)c] != want && failures++ < 5)
          std::printf("window_max_u8 C=%ld taps=%ld [%ld]: %d != %d\n", (long)C, (long)taps, (long)c, cm[(size_t)c], want);
      }
    }
  }
}

static void check_pool() {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 100003})
      for (int64_t grain : {1, 3, 64}) {
        std::vector<std::atomic<int>> hits((size_t)n);
        for (auto& h : hits) h = 0;
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          if (b < 0 || e > n || b >= e) failures++;
          for (int64_t i = b; i < e; i++) hits[(size_t)i]++;
        });
        for (int64_t i = 0; i < n; i++)
          if (hits[(size_t)i] != 1 && failures++ < 5)
            std::printf("pool threads=%d n=%ld grain=%ld: index %ld ran %d times\n", threads, (long)n, (long)grain, (long)i,
                        hits[(size_t)i].load());
      }
    std::atomic<int64_t> inner{0};
    pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) pool.parallel_for(100, 1, [&](int64_t b2, int64_t e2) { inner += e2 - b2; });
    });
    if (inner != 800 && failures++ < 5) std::printf("pool threads=%d: nested regions ran %ld of 800\n", threads, (long)inner.load());
    bool caught = false;
    std::atomic<bool> caller_ran{false};
    const std::thread::id caller = std::this_thread::get_id();
    try {
      pool.parallel_for(1000, 1, [&](int64_t, int64_t) {
        if (std::this_thread::get_id() != caller) return;
        caller_ran = true;
        throw std::runtime_error("boom");
      });
    } catch (const std::runtime_error&) {
      caught = true;
    }
    std::atomic<int64_t> after{0};
    pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) { after += e - b; });
    if ((caught != caller_ran.load() || after != 1000) && failures++ < 5)
      std::printf("pool threads=%d: exception not contained\n", threads);
    // an exception on a worker's share reaches the caller too (once the region is closed)
    bool caught_worker = false;
    std::atomic<bool> worker_threw{false};
    try {
      pool.parallel_for(100000, 1, [&](int64_t, int64_t) {
        if (std::this_thread::get_id() == caller) {  // keep the caller busy so a worker gets chunks
          for (int spin = 0; spin < 2000 && !worker_threw; spin++) std::this_thread::yield();
          return;
        }
        worker_threw = true;
        throw std::runtime_error("worker boom");
      });
    } catch (const std::runtime_error&) {
      caught_worker = true;
    }
    after = 0;
    pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) { after += e - b; });
    if ((caught_worker != worker_threw.load() || after != 1000) && failures++ < 5)
      std::printf("pool threads=%d: a worker's exception was not handed to the caller\n", threads);
  }
}

// vec_math against double precision: the ulp bounds its header states, over random, tiny, huge
// and special arguments, at every length's tail (lengths 1..W+1 go through the padded block).
static double ulps(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  float w = (float)want;
  if (std::isinf(w)) return got == w ? 0 : 1e30;
  if (std::fabs(want) < 1e-30) return std::fabs(got - want) < 1e-36 ? 0 : 1e30;
  double u = std::fabs((double)std::nextafter(w, INFINITY) - w);
  return std::fabs((double)got - want) / u;
}
static void check_vec_math(std::mt19937& rng) {
  std::vector<float> x;
  std::uniform_real_distribution<float> wide(-110.f, 95.f), mid(-12.f, 12.f), tiny(-1e-3f, 1e-3f);
  for (int i = 0; i < 200000; i++) x.push_back(i % 3 == 0 ? wide(rng) : i % 3 == 1 ? mid(rng) : tiny(rng));
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 88.72f, 88.7228f, 88.73f, -103.9f, -104.f, -105.f, INFINITY, -INFINITY, NAN})
    x.push_back(v);
  {  // hardswish is XNNPACK's float formula itself: every path gives exactly it
    std::vector<float> h(x.size());
    vec_hardswish(x.data(), h.data(), (int64_t)x.size());
    for (size_t i = 0; i < x.size(); i++) {
      const float t = fma_exact(x[i], 1.f / 6.f, 0.5f);
      const float want = (t > 0.f ? (t < 1.f ? t : 1.f) : 0.f) * x[i];
      if (std::memcmp(&want, &h[i], 4) != 0 && !(want != want && h[i] != h[i]) && failures++ < 5)
        std::printf("hardswish(%g) = %g, want %g\n", x[i], h[i], want);
    }
  }
  {  // SiLU in one pass: exactly x * vec_sigmoid(x), every length (tails) and in place
    std::vector<float> sg(x.size()), si(x.size());
    vec_sigmoid(x.data(), sg.data(), (int64_t)x.size());
    auto expect = [&](size_t len, const char* how) {  // si[0, len) against x * sigmoid(x)
      for (size_t i = 0; i < len; i++) {
        const float want = x[i] * sg[i];
        if (std::memcmp(&want, &si[i], 4) != 0 && !(want != want && si[i] != si[i]) && failures++ < 5)
          std::printf("silu%s(%g) = %g, want %g (x * sigmoid)\n", how, x[i], si[i], want);
      }
    };
    for (size_t len : {(size_t)1, (size_t)7, (size_t)17, (size_t)33, x.size()}) {
      vec_silu(x.data(), si.data(), (int64_t)len);
      expect(len, "");
    }
    si = x;
    vec_silu(si.data(), si.data(), (int64_t)si.size());
    expect(si.size(), " in place");
  }
  struct F { const char* name; void (*f)(const float*, float*, int64_t); double (*ref)(double); double bound; };
  const F fs[] = {{"exp", vec_exp, [](double v) { return std::exp(v); }, 2},
                  {"sigmoid", vec_sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, 3},
                  {"tanh", vec_tanh, [](double v) { return std::tanh(v); }, 4}};
  std::vector<float> y(x.size());
  for (const F& f : fs) {
    for (size_t len = 1; len <= 18; len++) f.f(x.data(), y.data(), (int64_t)len);  // tails
    f.f(x.data(), y.data(), (int64_t)x.size());
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); i++) {
      double e = ulps(y[i], f.ref(x[i]));
      if (e > worst) worst = e, at = i;
    }
    if (worst > f.bound) {
      std::printf("vec_%s: %.2f ulp at x=%g (bound %.0f)\n", f.name, worst, x[at], f.bound);
      failures++;
    }
  }
  {  // GELU: within 3 ulp for x >= 0; for x < 0 (1 + erf cancels) an absolute error <= 2^-22 |x|
    y.assign(x.size(), 0.f);
    for (size_t len = 1; len <= 18; len++) vec_gelu(x.data(), y.data(), (int64_t)len);
    vec_gelu(x.data(), y.data(), (int64_t)x.size());
    double worst_ulp = 0, worst_abs = 0;
    size_t at_ulp = 0, at_abs = 0;
    for (size_t i = 0; i < x.size(); i++) {
      const double v = x[i], want = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      if (!(v < 0)) {  // (NaN and +inf here: ulps() wants them exact)
        const double e = ulps(y[i], want);
        if (e > worst_ulp) worst_ulp = e, at_ulp = i;
      } else if (std::isinf(v)) {
        if (!std::isnan(y[i]) && failures++ < 5) std::printf("vec_gelu(-inf) = %g, want NaN (-inf * 0)\n", y[i]);
      } else {
        const double e = std::fabs((double)y[i] - want) / -v;
        if (e > worst_abs) worst_abs = e, at_abs = i;
      }
    }
    if (worst_ulp > 3) {
      std::printf("vec_gelu: %.2f ulp at x=%g (bound 3)\n", worst_ulp, x[at_ulp]);
      failures++;
    }
    if (worst_abs > std::ldexp(1.0, -22)) {
      std::printf("vec_gelu: error %.3g |x| at x=%g (bound 2^-22 |x|)\n", worst_abs, x[at_abs]);
      failures++;
    }
  }
  for (int len : {1, 5, 16, 17, 197, 1000}) {  // softmax rows, in place too
    std::vector<float> r(x.begin(), x.begin() + len), o((size_t)len);
    for (auto& v : r) v = std::fmod(v, 30.f);
    const std::vector<float> r0 = r;
    vec_softmax_row(r.data(), o.data(), len);
    double m = -1e300, s = 0;
    for (float v : r0) m = std::max(m, (double)v);
    for (float v : r0) s += std::exp(v - m);
    vec_softmax_row(r.data(), r.data(), len);
    for (int i = 0; i < len; i++) {
      double want = std::exp(r0[i] - m) / s;
      if (std::fabs(o[i] - want) > 1e-5 * want + 1e-30 || r[i] != o[i]) {
        std::printf("vec_softmax_row: len %d element %d: %g vs %g\n", len, i, o[i], want);
        failures++;
        break;
      }
    }
  }
}

// add_q8 against scalar loops: operands as codes or float grid points, output float32, snapped or
// codes; lengths around the vector widths and a start inside the arrays.
static void check_add_q8(std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255);
  const Int8Grid grid{1.f / 0.03f, -128.f, 127.f, 0.03f};
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 100, 1000})
    for (int form = 0; form < 4; form++)
      for (int kind = 0; kind < 3; kind++) {
        const int64_t begin = n > 20 ? 5 : 0;
        std::vector<uint8_t> ca((size_t)n), cb((size_t)n), codes((size_t)n, 3);
        std::vector<float> va((size_t)n), vb((size_t)n), y((size_t)n, NAN);
        for (auto& c : ca) c = (uint8_t)code(rng);
        for (auto& c : cb) c = (uint8_t)code(rng);
        Q8Operand a, b;
        a.shift = code(rng), a.scale = 0.021f, b.shift = code(rng), b.scale = 0.034f;
        for (int64_t i = 0; i < n; i++) {
          va[(size_t)i] = (float)((int32_t)ca[(size_t)i] - a.shift) * a.scale;
          vb[(size_t)i] = (float)((int32_t)cb[(size_t)i] - b.shift) * b.scale;
        }
        if (form & 1) a.codes = ca.data(); else a.values = va.data();
        if (form & 2) b.codes = cb.data(); else b.values = vb.data();
        QOutput out;
        if (kind == 2) out.codes = codes.data(), out.code_shift = 128;
        else out.C = y.data();
        if (kind >= 1) out.grid = &grid;
        const float lo = -2.5f, hi = 3.f;
        add_q8(a, b, lo, hi, out, begin, n);
        for (int64_t i = begin; i < n; i++) {
          const float r = std::min(std::max(va[(size_t)i] + vb[(size_t)i], lo), hi);
          const bool ok = kind == 2 ? codes[(size_t)i] == grid_code(r, grid, 128)
                                    : y[(size_t)i] == (kind == 1 ? snap_to_grid(r, grid) : r);
          if (!ok && failures++ < 5)
            std::printf("add_q8 n=%ld form %d kind %d element %ld: %g / %d\n", (long)n, form, kind, (long)i,
                        y[(size_t)i], codes[(size_t)i]);
        }
      }
}

// Channel block b's tile of a 1-D convolution test: input rows xs apart, clamped to [-2.5, 3].
static Conv1dRowsTile conv1d_test_tile(const float* x, int64_t xs, int64_t C, int64_t KW, int64_t dw, const PackedB& pb,
                                       int64_t b, const float* bias) {
  Conv1dRowsTile t;
  t.x = x;
  t.xs = xs;
  t.C = C;
  t.KW = KW;
  t.dw = dw;
  t.K = KW * C;
  t.wpanel = pb.data.data() + (b / 2) * 16 * t.K + (b % 2) * 8;
  t.bias = bias ? bias + b * 8 : nullptr;
  t.lo = -2.5f;
  t.hi = 3.f;
  return t;
}

// The 1-D convolution tile read from channel-major rows (AVX-512; nothing elsewhere) against the
// definition: 8 output channels (either half of a packed panel) x 16 * pv positions, strided rows,
// dilation, with and without bias, clamped, the output transposed into rows ldy apart; odd blocks
// in two channel chunks (partial sums carried between them).
static void check_conv1d_rows(std::mt19937& rng) {
  if (!conv1d_rows_available()) return;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case { int64_t C, KW, dw, OC; };
  const Case cases[] = {{1, 1, 1, 8}, {3, 3, 1, 16}, {32, 11, 5, 32}, {5, 7, 3, 24}, {17, 2, 2, 40}};
  for (const Case& cs : cases)
    for (int pv = 1; pv <= 3; pv++)
      for (bool with_bias : {true, false}) {
        const int64_t P = 16 * pv, span = (cs.KW - 1) * cs.dw, xs = P + span + 5, K = cs.KW * cs.C, ldy = cs.OC + 3;
        std::vector<float> x((size_t)(cs.C * xs)), B((size_t)(K * cs.OC)), bias((size_t)cs.OC);
        for (auto& v : x) v = u(rng);
        for (auto& v : B) v = u(rng);
        for (auto& v : bias) v = u(rng);
        const PackedB pb = pack_b(nullptr, K, cs.OC, B.data(), cs.OC, 1);
        std::vector<float> y((size_t)(P * ldy), NAN);
        for (int64_t b = 0; b < cs.OC / 8; b++) {
          Conv1dRowsTile t = conv1d_test_tile(x.data(), xs, cs.C, cs.KW, cs.dw, pb, b, with_bias ? bias.data() : nullptr);
          t.y = y.data() + b * 8;
          t.ldy = ldy;
          if (cs.C >= 5 && b % 2) {  // in two channel chunks, the partial sums carried between them
            std::vector<float> sums(8 * 48);
            Conv1dRowsTile a = t;
            a.C = cs.C / 2;
            a.Cw = cs.C;
            a.partial = sums.data();
            Conv1dRowsTile z = t;
            z.C = cs.C - a.C;
            z.Cw = cs.C;
            z.x = t.x + a.C * xs;
            z.wpanel = t.wpanel + a.C * 16;
            z.init = sums.data();
            if ((!conv1d_rows_tile(a, pv) || !conv1d_rows_tile(z, pv)) && failures++ < 5)
              std::printf("conv1d_rows: tile declined\n");
            continue;
          }
          if (!conv1d_rows_tile(t, pv) && failures++ < 5) std::printf("conv1d_rows: tile declined\n");
        }
        for (int64_t p = 0; p < P; p++)
          for (int64_t oc = 0; oc < cs.OC; oc++) {
            double want = with_bias ? bias[(size_t)oc] : 0.0;
            for (int64_t j = 0; j < cs.KW; j++)
              for (int64_t c = 0; c < cs.C; c++)
                want += (double)x[(size_t)(c * xs + p + j * cs.dw)] * B[(size_t)((j * cs.C + c) * cs.OC + oc)];
            want = std::min(std::max(want, -2.5), 3.0);
            const float got = y[(size_t)(p * ldy + oc)];
            if (!(std::fabs(got - want) <= 1e-5 * (1 + K / 16)) && failures++ < 5)
              std::printf("conv1d_rows C=%ld KW=%ld dw=%ld OC=%ld pv=%d (%ld,%ld): %g != %g\n", (long)cs.C, (long)cs.KW,
                          (long)cs.dw, (long)cs.OC, pv, (long)p, (long)oc, got, want);
          }
      }
}

// The same tile storing channel rows (an NCHW output: channel i's positions at y + i * ldy), with
// two residuals added and clamped in turn, a LeakyReLU applied, and the LeakyReLU of that into a second output.
static void check_conv1d_rows_nchw(std::mt19937& rng) {
  if (!conv1d_rows_available()) return;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Case { int64_t C, KW, dw, OC; };
  const Case cases[] = {{3, 3, 1, 16}, {32, 11, 5, 32}, {17, 2, 2, 40}};
  for (const Case& cs : cases)
    for (int pv = 1; pv <= 3; pv++)
      for (int mode = 0; mode < 4; mode++) {  // bit 0: residual; bit 1: leaky and a second output
        const bool with_res = mode & 1, with_act = mode & 2;
        const int64_t P = 16 * pv, span = (cs.KW - 1) * cs.dw, xs = P + span + 5, K = cs.KW * cs.C, ldy = P + 7, ldr = P + 7;
        std::vector<float> x((size_t)(cs.C * xs)), B((size_t)(K * cs.OC)), bias((size_t)cs.OC), res((size_t)(cs.OC * ldr));
        for (auto& v : x) v = u(rng);
        for (auto& v : B) v = u(rng);
        for (auto& v : bias) v = u(rng);
        for (auto& v : res) v = u(rng);
        const PackedB pb = pack_b(nullptr, K, cs.OC, B.data(), cs.OC, 1);
        std::vector<float> y((size_t)(cs.OC * ldy), NAN), y2((size_t)(cs.OC * ldy), NAN);
        for (int64_t b = 0; b < cs.OC / 8; b++) {
          Conv1dRowsTile t = conv1d_test_tile(x.data(), xs, cs.C, cs.KW, cs.dw, pb, b, bias.data());
          t.channel_major = true;
          t.y = y.data() + b * 8 * ldy;
          t.ldy = ldy;
          if (with_res) {  // two residuals, each sum clamped
            t.res[0] = res.data() + b * 8 * ldr;
            t.res[1] = res.data() + 5 + b * 8 * ldr;
            t.ldr = ldr;
            t.res_lo[0] = -2.f;
            t.res_hi[0] = 2.75f;
            t.res_lo[1] = -2.25f;
            t.res_hi[1] = 2.5f;
          }
          if (with_act) {
            t.leaky = true;
            t.slope = 0.1f;
            t.y2 = y2.data() + b * 8 * ldy;
            t.slope2 = 0.01f;
          }
          if (!conv1d_rows_tile(t, pv) && failures++ < 5) std::printf("conv1d_rows (NCHW): tile declined\n");
        }
        for (int64_t p = 0; p < P; p++)
          for (int64_t oc = 0; oc < cs.OC; oc++) {
            double want = bias[(size_t)oc];
            for (int64_t j = 0; j < cs.KW; j++)
              for (int64_t c = 0; c < cs.C; c++)
                want += (double)x[(size_t)(c * xs + p + j * cs.dw)] * B[(size_t)((j * cs.C + c) * cs.OC + oc)];
            want = std::min(std::max(want, -2.5), 3.0);
            if (with_res) {
              want = std::min(std::max((double)(float)want + res[(size_t)(oc * ldr + p)], -2.0), 2.75);
              want = std::min(std::max((double)(float)want + res[(size_t)(oc * ldr + p + 5)], -2.25), 2.5);
            }
            if (with_act) want = want > 0 ? want : want * (double)0.1f;
            const float got = y[(size_t)(oc * ldy + p)];
            if (!(std::fabs(got - want) <= 1e-5 * (1 + K / 16)) && failures++ < 5)
              std::printf("conv1d_rows (NCHW) C=%ld KW=%ld OC=%ld pv=%d mode %d (%ld,%ld): %g != %g\n", (long)cs.C,
                          (long)cs.KW, (long)cs.OC, pv, mode, (long)p, (long)oc, got, want);
            // the second output: exactly the LeakyReLU of the first
            const float g2 = y2[(size_t)(oc * ldy + p)], w2 = got > 0 ? got : got * 0.01f;
            if (with_act && !(g2 == w2) && failures++ < 5)
              std::printf("conv1d_rows (NCHW) second output (%ld,%ld): %g != %g\n", (long)p, (long)oc, g2, w2);
          }
      }
}

// Winograd F(2x2, 3x3) against a direct convolution in double: borders (paddings 0-3, asymmetric
// through the output size), ragged tiles (odd output sizes), batches, channel counts off the
// vector width, bias + clamp + a residual with its own row stride, and rows_done covering every
// output row once, after those rows are final (checked against the finished values right there).
struct WinoRows {
  const std::vector<float>* y;
  std::vector<int>* seen;
  int64_t OC;
  std::atomic<int>* bad;
};
static void check_winograd(ThreadPool* pool, int64_t N, int64_t H, int64_t W, int64_t C, int64_t OC, int64_t pt, int64_t pl,
                           int64_t pb, int64_t pr, bool residual, std::mt19937& rng, int64_t dil = 1) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t OH = H + pt + pb - 2 * dil, OW = W + pl + pr - 2 * dil, M = N * OH * OW, ldr = OC + 5;
  if (OH <= 0 || OW <= 0) return;
  std::vector<float> X(N * H * W * C), F(9 * C * OC), bias(OC), Y(M * OC, 7.f), R(M * ldr);
  for (auto& x : X) x = u(rng);
  for (auto& x : F) x = u(rng);  // [(kh, kw, ic), oc]: the direct GEMM's operand
  for (auto& x : bias) x = u(rng);
  for (auto& x : R) x = u(rng);
  const PackedB direct = pack_b(pool, 9 * C, OC, F.data(), OC, 1);
  const std::vector<PackedB> U = winograd_filters_3x3(pool, direct, C);
  if (U.size() != 16) {
    if (failures++ < 5) std::printf("winograd: no filters for C=%ld OC=%ld\n", (long)C, (long)OC);
    return;
  }
  GemmEpilogue ep;
  ep.bias_col = bias.data();
  ep.min = -2.5f;
  ep.max = 3.f;
  if (residual) {
    ep.residual = R.data();
    ep.ldr = ldr;
    ep.res_min = -3.f;
    ep.res_max = 2.5f;
  }
  auto want_at = [&](int64_t m, int64_t oc) {
    const int64_t n = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
    double s = bias[oc];
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 3; j++) {
        const int64_t ih = oh + i * dil - pt, iw = ow + j * dil - pl;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        for (int64_t c = 0; c < C; c++) s += (double)X[((n * H + ih) * W + iw) * C + c] * F[((i * 3 + j) * C + c) * OC + oc];
      }
    float v = std::fmin(std::fmax((float)s, ep.min), ep.max);
    if (residual) v = std::fmin(std::fmax(v + R[m * ldr + oc], ep.res_min), ep.res_max);
    return v;
  };
  const float tol = 2e-5f * (float)(1 + 9 * C / 16);
  std::vector<int> seen(M, 0);
  std::atomic<int> bad{0};
  WinoRows ctx{&Y, &seen, OC, &bad};
  ep.rows_ctx = &ctx;
  ep.rows_done = [](void* p, int64_t m0, int64_t m1) {
    WinoRows& r = *static_cast<WinoRows*>(p);
    for (int64_t m = m0; m < m1; m++) {
      (*r.seen)[m]++;
      for (int64_t oc = 0; oc < r.OC; oc++)
        if ((*r.y)[m * r.OC + oc] == 7.f) r.bad->fetch_add(1);  // (not written yet: 7 is outside the clamp)
    }
  };
  const WinogradGeom g{N, H, W, C, OH, OW, OC, pt, pl, dil};
  if (!conv3x3_winograd_f32(pool, g, X.data(), U, Y.data(), ep)) {
    if (failures++ < 5) std::printf("winograd declined N=%ld H=%ld W=%ld\n", (long)N, (long)H, (long)W);
    return;
  }
  for (int64_t m = 0; m < M; m++) {
    if (seen[m] != 1 && failures++ < 5) std::printf("winograd rows_done: row %ld reported %d times\n", (long)m, seen[m]);
    for (int64_t oc = 0; oc < OC; oc++) {
      const float want = want_at(m, oc), got = Y[m * OC + oc];
      if (!(std::fabs(want - got) <= tol) && failures++ < 5)
        std::printf("winograd N=%ld H=%ld W=%ld C=%ld OC=%ld pad %ld,%ld,%ld,%ld dilation %ld (%ld,%ld): %g != %g\n",
                    (long)N, (long)H, (long)W, (long)C, (long)OC, (long)pt, (long)pl, (long)pb, (long)pr, (long)dil, (long)m,
                    (long)oc, got, want);
    }
  }
  if (bad.load() && failures++ < 5) std::printf("winograd rows_done before the rows were written (%d)\n", bad.load());
}

int main() {
  check_pool();
  std::mt19937 rng(7);
  check_vec_math(rng);
  check_transpose();
  check_transpose_u8();
  check_half(rng);
  check_codes(rng);
  check_grid_lookup(rng);
  check_snap(rng);
  check_column_sums(rng);
  check_row_sums(rng);
  check_code_sums(rng);
  check_row_extreme(rng);
  check_quantize_row(rng);
  check_depthwise(rng);
  check_conv1d_rows(rng);
  check_conv1d_rows_nchw(rng);
  check_depthwise_q8(rng);
  check_add_q8(rng);
  check_qgemm_indirect(rng);
  check_qgemm_grouped(rng);
  check_broadcast(rng);
  check_window_reduce(rng);
  failures += check_qgemm_qb4(rng);
  failures += check_weight_arena();
  ThreadPool one(1), two(2);
  const int64_t Ms[] = {1, 3, 6, 7, 8, 9, 13, 16, 17, 49, 100};
  const int64_t Ns[] = {1, 8, 15, 16, 17, 24, 31, 32, 33, 48, 70};
  const int64_t Ks[] = {1, 3, 4, 5, 27, 64, 129};
  int cases = 0;
  for (int64_t M : Ms)
    for (int64_t N : Ns)
      for (int64_t K : Ks) {
        ThreadPool* pool = (cases & 1) ? &two : &one;
        check_sgemm(pool, M, N, K, (cases / 2) % 2 == 1, rng);
        check_qgemm(pool, M, N, K, rng);
        cases++;
      }
  // big enough to take the threaded paths
  for (int64_t M : {1, 5, 6, 13, 64})
    for (int64_t N : {7, 16, 40, 70})
      for (int64_t K : {1, 9, 200, 300}) check_sgemm_half(M % 2 ? &two : &one, M, N, K, rng);
  check_sgemm_half(&two, 1, 4096, 512, rng);  // a GEMV split by columns
  check_sgemm(&two, 200, 96, 160, false, rng);
  check_sgemm(&two, 300, 40, 96, true, rng);
  check_qgemm(&two, 64, 200, 256, rng);
  check_qgemm(&two, 2, 1000, 300, rng);
  {
    int wc = 0;
    for (int64_t C : {1, 8, 19})
      for (int64_t OC : {5, 16, 33})
        for (auto hw : {std::array<int64_t, 2>{5, 4}, std::array<int64_t, 2>{12, 9}, std::array<int64_t, 2>{17, 22}})
          for (auto pad : {std::array<int64_t, 4>{1, 1, 1, 1}, std::array<int64_t, 4>{0, 0, 0, 0}, std::array<int64_t, 4>{2, 0, 3, 1}}) {
            check_winograd(wc % 3 ? &two : (wc % 2 ? &one : nullptr), 1 + wc % 2, hw[0], hw[1], C, OC, pad[0], pad[1],
                           pad[2], pad[3], wc % 2 == 0, rng);
            wc++;
          }
    check_winograd(&two, 2, 40, 30, 48, 70, 1, 1, 1, 1, true, rng);  // several blocks a thread
    for (int64_t dil : {2, 3, 4})  // dilated: d x d interleaved grids of tiles, bands of 2d rows
      for (auto hw : {std::array<int64_t, 2>{13, 11}, std::array<int64_t, 2>{28, 28}})
        check_winograd(dil % 2 ? &two : &one, 1 + dil % 2, hw[0], hw[1], 9, 20, dil, dil, dil - 1, dil + 1, dil == 3, rng, dil);
  }
  for (int64_t K : {100, 190, 193, 256, 300, 700})  // one chunk, chunks of 128 with a longer last one
    for (int64_t M : {7, 64, 150}) check_sgemm_chain(M % 2 ? &two : &one, M, 40, K, rng);
  std::printf("kernel_check (%s): thread pool, vec_math, broadcasts, windows + %d shapes x 2 kernels, %d mismatches\n",
              cpu_features_string(), cases + 4, failures);
  return failures ? 1 : 0;
}
