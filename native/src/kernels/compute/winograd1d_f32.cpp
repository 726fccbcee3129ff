#include "kernels/compute/winograd1d_f32.h"
#include "kernels/compute/winograd1d_impl.h"

#include <algorithm>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/winograd_scalar_lanes.h"
#include "util/float_buffer.h"

namespace etnp {
namespace {

constexpr int64_t NR = 16;  // the packed panels' width (gemm.h)

void bands_scalar(const Winograd1dGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                  const GemmEpilogue& ep, int64_t n, int64_t b0, int64_t b1, float* v, float* mb, const float* zeros) {
  winograd1d_impl::bands<WinogradScalarLanes>(g, X, U, Y, ep, n, b0, b1, v, mb, zeros);
}

Winograd1dBands pick_bands() {
#if defined(__x86_64__)
  if (cpu_has_avx512f()) return &winograd1d_bands_avx512;
  if (cpu_has_avx2_fma()) return &winograd1d_bands_avx2;
#endif
  return &bands_scalar;
}

}  // namespace

bool winograd1d_filters_into(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps, std::vector<PackedB>& out) {
  const int64_t OC = direct.N, panels = (OC + NR - 1) / NR;
  if (!direct.half.empty() || IC <= 0 || OC <= 0 || taps < 1 || direct.K != taps * IC ||
      (int64_t)direct.data.size() < panels * NR * direct.K)
    return false;
  const int64_t P = (taps + 2) / 3, K = P * IC;
  out.resize(5);
  for (PackedB& u : out) {
    u.K = K, u.N = OC;
    u.half = decltype(u.half)();
    u.data.resize((size_t)(panels * NR * K));
  }
  // Panel by panel (the direct packing's and the transformed ones' share their 16 columns): row
  // piece * IC + ic of U[xi] from rows (3 * piece + i) * IC + ic of the direct panel, i < 3 (zero
  // past the last tap); the padding columns stay zero, as they are in the direct panel
  auto transform = [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; q++) {
      const float* src = direct.data.data() + q * NR * direct.K;
      float* dst[5];
      for (int xi = 0; xi < 5; xi++) dst[xi] = out[(size_t)xi].data.data() + q * NR * K;
      for (int64_t r = 0; r < K; r++) {  // r = piece * IC + ic
        const int64_t j0 = r / IC * 3, ic = r % IC;
        const float* g0 = src + (j0 * IC + ic) * NR;
        const float* g1 = j0 + 1 < taps ? src + ((j0 + 1) * IC + ic) * NR : nullptr;
        const float* g2 = j0 + 2 < taps ? src + ((j0 + 2) * IC + ic) * NR : nullptr;
        for (int64_t j = 0; j < NR; j++) {
          const float a = g0[j], b1 = g1 ? g1[j] : 0.f, c = g2 ? g2[j] : 0.f;
          dst[0][r * NR + j] = 0.5f * a;
          dst[1][r * NR + j] = 0.5f * (a + b1 + c);
          dst[2][r * NR + j] = (a - b1 + c) / 6.f;
          dst[3][r * NR + j] = (a + 2.f * b1 + 4.f * c) / 6.f;
          dst[4][r * NR + j] = c;
        }
      }
    }
  };
  if (pool && K * OC > (1 << 15)) pool->parallel_for(panels, 1, transform);
  else transform(0, panels);
  return true;
}

std::vector<PackedB> winograd1d_filters(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps) {
  std::vector<PackedB> out;
  if (!winograd1d_filters_into(pool, direct, IC, taps, out)) return {};
  return out;
}

bool conv1d_winograd_f32(ThreadPool* pool, const Winograd1dGeom& g, const float* X, const std::vector<PackedB>& U,
                         float* Y, const GemmEpilogue& ep) {
  if (ep.bias_row || ep.accumulate || U.size() != 5 || g.C <= 0 || g.dilation < 1 || g.pad < 0) return false;
  for (const PackedB& u : U)
    if (u.K != U[0].K || u.K < g.C || u.K % g.C || u.N != g.OC || !u.half.empty()) return false;
  if (g.N <= 0 || g.OL <= 0 || g.OC <= 0) return true;
  static const Winograd1dBands run = pick_bands();
  const int64_t d = g.dilation, P = U[0].K / g.C, TB = winograd1d_bands(g.OL, d);
  // Blocks of whole bands of one sequence: a phase's transformed windows and products
  // (5 x bands x (P * C + OC) floats, about) near 320 KiB, so they stay in L2 between the
  // transforms and the GEMMs; at least one block per thread where there are bands enough
  int64_t per = std::max<int64_t>(24, (int64_t(1) << 14) / (g.C + g.OC));
  const int64_t threads = pool ? pool->num_threads() : 1;
  if (threads > 1) per = std::min(per, std::max<int64_t>(1, (g.N * TB + threads - 1) / threads));
  per = std::min(per, TB);
  const int64_t per_seq = (TB + per - 1) / per, blocks = g.N * per_seq;
  auto work = [&](int64_t b, int64_t e) {
    thread_local FloatBuffer v, mb, zeros;  // grow only
    const size_t rows = (size_t)(per + P - 1);
    if (v.size() < 5 * rows * (size_t)g.C) v.resize(5 * rows * (size_t)g.C);
    if (mb.size() < 5 * (size_t)per * (size_t)g.OC) mb.resize(5 * (size_t)per * (size_t)g.OC);
    if (zeros.size() < (size_t)g.C) zeros.resize((size_t)g.C);
    std::memset(zeros.data(), 0, (size_t)g.C * sizeof(float));
    for (int64_t blk = b; blk < e; blk++) {
      const int64_t n = blk / per_seq, b0 = blk % per_seq * per, b1 = std::min(TB, b0 + per);
      run(g, X, U, Y, ep, n, b0, b1, v.data(), mb.data(), zeros.data());
      if (ep.rows_done)  // the block's outputs: consecutive rows of sequence n
        ep.rows_done(ep.rows_ctx, n * g.OL + 3 * d * b0, n * g.OL + std::min(g.OL, 3 * d * b1));
    }
  };
  if (pool && blocks > 1) pool->parallel_for(blocks, 1, work);
  else work(0, blocks);
  return true;
}

}  // namespace etnp
