// Packing of GEMM operands into the 16-column panels of gemm.h (float32, or float16 where every
// value is one), and sgemm, which packs B per call.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/compute/gemm.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/gemv_f32.h"
#include "kernels/compute/half_convert.h"
#include "os/thread_slot.h"

namespace etnp {

constexpr int64_t NR = 16;

namespace {
// Panel q of B (columns [16q, 16q + 16), zero beyond N) into dst[k * 16 + j].
void pack_panel(float* dst, int64_t q, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb) {
  const int64_t n0 = q * NR, nn = std::min<int64_t>(NR, N - n0);
  if (rsb == 1 && csb != 1) {  // B^T stored row-major (weights [N, K]): 16 rows read side by side
    const float* src[NR];
    for (int64_t j = 0; j < nn; j++) src[j] = B + (n0 + j) * csb;
    for (int64_t k = 0; k < K; k++) {
      float* d = dst + k * NR;
      for (int64_t j = 0; j < nn; j++) d[j] = src[j][k];
      for (int64_t j = nn; j < NR; j++) d[j] = 0.f;
    }
    return;
  }
  for (int64_t k = 0; k < K; k++) {
    const float* src = B + k * rsb + n0 * csb;
    float* d = dst + k * NR;
    if (csb == 1) std::memcpy(d, src, nn * sizeof(float));
    else for (int64_t j = 0; j < nn; j++) d[j] = src[j * csb];
    for (int64_t j = nn; j < NR; j++) d[j] = 0.f;
  }
}

void pack_b_into(PackedB& p, ThreadPool* pool, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb) {
  p.K = K;
  p.N = N;
  int64_t nb = (N + NR - 1) / NR;
  p.half = decltype(p.half)();  // (storage given back: a float16 packing found inexact)
  p.data.resize((size_t)(nb * NR * K));
  auto work = [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; q++) pack_panel(p.data.data() + q * NR * K, q, K, N, B, rsb, csb);
  };
  if (pool && K * N > (1 << 15)) pool->parallel_for(nb, 1, work);
  else work(0, nb);
}

// Float16 panels: each panel packed as float32, narrowed, and widened back to see that it is exact;
// false (the packing unfinished) where a value is not a float16.
bool pack_b_half_into(PackedB& p, ThreadPool* pool, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb) {
  p.K = K;
  p.N = N;
  const int64_t nb = (N + NR - 1) / NR;
  p.data.clear();
  p.half.resize((size_t)(nb * NR * K));
  std::atomic<bool> exact{true};
  auto work = [&](int64_t b, int64_t e) {
    std::vector<float> panel((size_t)(NR * K)), back((size_t)(NR * K));
    for (int64_t q = b; q < e && exact.load(std::memory_order_relaxed); q++) {
      uint16_t* h = p.half.data() + q * NR * K;
      pack_panel(panel.data(), q, K, N, B, rsb, csb);
      float_to_half_n(panel.data(), h, NR * K);
      half_to_float_n(h, back.data(), NR * K);
      if (std::memcmp(panel.data(), back.data(), panel.size() * sizeof(float)) != 0) exact.store(false);
    }
  };
  if (pool && K * N > (1 << 15)) pool->parallel_for(nb, 1, work);
  else work(0, nb);
  return exact.load();
}
}  // namespace

PackedB pack_b(ThreadPool* pool, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb, bool half) {
  PackedB p;
  if (!half || K <= 0 || N <= 0 || !pack_b_half_into(p, pool, K, N, B, rsb, csb)) pack_b_into(p, pool, K, N, B, rsb, csb);
  return p;
}

void sgemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
           const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, const GemmEpilogue& ep) {
  if (M <= 0 || N <= 0) return;
  // one row against a B that changes every call (a decode step's attention): B read in place
  if (M == 1 && csb == 1 && csa == 1 && sgemv_rowmajor(pool, N, K, A, B, rsb, C, ep)) {
    if (ep.rows_done) ep.rows_done(ep.rows_ctx, 0, 1);
    return;
  }
  ETNP_THREAD_LOCAL(PackedB, pb);  // B packed per call (weights known only now): this thread's buffer, grows only
  pack_b_into(pb, gemm_pool(pool, M, N, K), K, N, B, rsb, csb);
  sgemm_packed(pool, M, A, rsa, csa, pb, C, ldc, ep);
}

}  // namespace etnp
