#include "kernels/compute/winograd1d_f32.h"
#include "kernels/compute/winograd1d_impl.h"

#include <algorithm>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/transpose_f32.h"
#include "kernels/compute/winograd_scalar_lanes.h"
#include "os/thread_slot.h"
#include "util/float_buffer.h"

namespace etnp {
namespace {

constexpr int64_t NR = 16;  // the packed panels' width (gemm.h)

void bands_scalar(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                  const Winograd1dBlock& b) {
  winograd1d_impl::bands<WinogradScalarLanes>(g, U, ep, b);
}

Winograd1dBands pick_bands() {
#if defined(__x86_64__)
  if (cpu_has_avx512f()) return &winograd1d_bands_avx512;
  if (cpu_has_avx2_fma()) return &winograd1d_bands_avx2;
#endif
  return &bands_scalar;
}

// The 5 transformed filters' panels into dst[xi] (each panels x 16 x P * IC floats), panel by panel
// (the direct packing's and the transformed ones' share their 16 columns): row piece * IC + ic of
// U[xi] from rows (3 * piece + i) * IC + ic of the direct panel, i < 3 (zero past the last tap);
// the padding columns come out zero, as they are in the direct panel.
void transform_panels(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps, float* const* dst) {
  const int64_t OC = direct.N, panels = (OC + NR - 1) / NR, K = (taps + 2) / 3 * IC;
  auto transform = [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; q++) {
      const float* src = direct.data.data() + q * NR * direct.K;
      float* d[5];
      for (int xi = 0; xi < 5; xi++) d[xi] = dst[xi] + q * NR * K;
      for (int64_t r = 0; r < K; r++) {  // r = piece * IC + ic
        const int64_t j0 = r / IC * 3, ic = r % IC;
        const float* g0 = src + (j0 * IC + ic) * NR;
        const float* g1 = j0 + 1 < taps ? src + ((j0 + 1) * IC + ic) * NR : nullptr;
        const float* g2 = j0 + 2 < taps ? src + ((j0 + 2) * IC + ic) * NR : nullptr;
        for (int64_t j = 0; j < NR; j++) {
          const float a = g0[j], b1 = g1 ? g1[j] : 0.f, c = g2 ? g2[j] : 0.f;
          d[0][r * NR + j] = 0.5f * a;
          d[1][r * NR + j] = 0.5f * (a + b1 + c);
          d[2][r * NR + j] = (a - b1 + c) / 6.f;
          d[3][r * NR + j] = (a + 2.f * b1 + 4.f * c) / 6.f;
          d[4][r * NR + j] = c;
        }
      }
    }
  };
  if (pool && K * OC > (1 << 15)) pool->parallel_for(panels, 1, transform);
  else transform(0, panels);
}

bool direct_fits(const PackedB& direct, int64_t IC, int64_t taps) {
  const int64_t OC = direct.N;
  return direct.half.empty() && IC > 0 && OC > 0 && taps >= 1 && direct.K == taps * IC &&
         (int64_t)direct.data.size() >= (OC + NR - 1) / NR * NR * direct.K;
}

}  // namespace

bool winograd1d_filters_into(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps, FloatBuffer& store,
                             std::vector<PackedB>& out) {
  if (!direct_fits(direct, IC, taps)) return false;
  const int64_t OC = direct.N, K = (taps + 2) / 3 * IC;
  const size_t need = (size_t)((OC + NR - 1) / NR * NR * K);
  if (store.size() < 5 * need) {  // (given back first: old and new never coexist)
    store = FloatBuffer();
    store.resize(5 * need);
  }
  float* dst[5];
  for (int xi = 0; xi < 5; xi++) dst[xi] = store.data() + xi * need;
  transform_panels(pool, direct, IC, taps, dst);
  out.resize(5);
  for (int xi = 0; xi < 5; xi++) {
    PackedB& u = out[(size_t)xi];
    u.K = K, u.N = OC;
    u.half = decltype(u.half)();
    u.data.set_view(dst[xi], need);
  }
  return true;
}

std::vector<PackedB> winograd1d_filters(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps) {
  if (!direct_fits(direct, IC, taps)) return {};
  const int64_t OC = direct.N, K = (taps + 2) / 3 * IC;
  std::vector<PackedB> out(5);
  float* dst[5];
  for (int xi = 0; xi < 5; xi++) {
    out[(size_t)xi].K = K, out[(size_t)xi].N = OC;
    out[(size_t)xi].data.resize((size_t)((OC + NR - 1) / NR * NR * K));
    dst[xi] = out[(size_t)xi].data.data();
  }
  transform_panels(pool, direct, IC, taps, dst);
  return out;
}

bool conv1d_winograd_f32(ThreadPool* pool, const Winograd1dGeom& g, const float* X, const std::vector<PackedB>& U,
                         float* Y, const GemmEpilogue& ep, const Winograd1dSink* sink) {
  if (ep.bias_row || ep.accumulate || U.size() != 5 || g.C <= 0 || g.dilation < 1 || g.pad < 0) return false;
  if (sink && (!sink->fn || ep.residual || ep.rows_done)) return false;
  for (const PackedB& u : U)
    if (u.K != U[0].K || u.K < g.C || u.K % g.C || u.N != g.OC || !u.half.empty()) return false;
  if (g.N <= 0 || g.OL <= 0 || g.OC <= 0) return true;
  static const Winograd1dBands run = pick_bands();
  const int64_t d = g.dilation, C = g.C, OC = g.OC, P = U[0].K / C, TB = winograd1d_bands(g.OL, d);
  // Blocks of whole bands of one sequence: a phase's transformed windows and products (5 x bands
  // x (P * C + OC) floats, about) near 320 KiB, and the block's input and output rows (3d floats of
  // C and of OC a band) about as much, so they stay in L2 between the steps; at least one block
  // per thread where there are bands enough
  int64_t per = std::max<int64_t>(8, std::max<int64_t>(24, (int64_t(1) << 14) / (C + OC)) / d);
  const int64_t threads = pool ? pool->num_threads() : 1;
  if (threads > 1) per = std::min(per, std::max<int64_t>(1, (g.N * TB + threads - 1) / threads));
  per = std::min(per, TB);
  const int64_t per_seq = (TB + per - 1) / per, blocks = g.N * per_seq;
  // a block's input positions: windows [b0, b1 + P - 1) of every phase, 5 samples d apart each
  auto span = [&](int64_t b0, int64_t b1, int64_t& lo, int64_t& hi) {
    lo = std::max<int64_t>(0, 3 * d * b0 - g.pad);
    hi = std::min<int64_t>(g.L, 3 * d * (b1 + P - 2) + 5 * d - g.pad);
  };
  auto work = [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(FloatBuffer, v);  // grow only
    ETNP_THREAD_LOCAL(FloatBuffer, mb);
    ETNP_THREAD_LOCAL(FloatBuffer, zeros);
    ETNP_THREAD_LOCAL(FloatBuffer, xs);
    ETNP_THREAD_LOCAL(FloatBuffer, ys);
    const size_t rows = (size_t)(per + P - 1);
    if (v.size() < 5 * rows * (size_t)C) v.resize(5 * rows * (size_t)C);
    if (mb.size() < 5 * (size_t)per * (size_t)OC) mb.resize(5 * (size_t)per * (size_t)OC);
    if (zeros.size() < (size_t)C) zeros.resize((size_t)C);
    std::memset(zeros.data(), 0, (size_t)C * sizeof(float));
    const size_t xs_rows = (size_t)(3 * d * (per + P - 2) + 5 * d), ys_rows = (size_t)(3 * d * per);
    if (g.channel_major && xs.size() < xs_rows * (size_t)C) xs.resize(xs_rows * (size_t)C);
    if (sink && ys.size() < ys_rows * (size_t)OC) ys.resize(ys_rows * (size_t)OC);
    for (int64_t blk = b; blk < e; blk++) {
      const int64_t n = blk / per_seq, b0 = blk % per_seq * per, b1 = std::min(TB, b0 + per);
      const int64_t o0 = 3 * d * b0, o1 = std::min(g.OL, 3 * d * b1);
      // (with a sink the block's rows go to its buffer: Y is not used, and may be null)
      Winograd1dBlock k{X + n * g.L * C, 0, g.L, sink ? ys.data() : Y + n * g.OL * OC,
                        ep.residual ? ep.residual + n * g.OL * ep.ldr : nullptr, sink ? o0 : 0, b0, b1, v.data(),
                        mb.data(), zeros.data()};
      if (g.channel_major) {  // the block's positions of sequence n's channel rows, position-major
        span(b0, b1, k.x0, k.x1);
        if (k.x1 > k.x0) transpose_strided_f32(X + n * C * g.L + k.x0, C, k.x1 - k.x0, g.L, xs.data(), C);
        k.x = xs.data();
      }
      run(g, U, ep, k);
      if (sink) sink->fn(sink->ctx, n, o0, o1, ys.data());
      else if (ep.rows_done) ep.rows_done(ep.rows_ctx, n * g.OL + o0, n * g.OL + o1);  // (consecutive rows of sequence n)
    }
  };
  if (pool && blocks > 1) pool->parallel_for(blocks, 1, work);
  else work(0, blocks);
  return true;
}

}  // namespace etnp
