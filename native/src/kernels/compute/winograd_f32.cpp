#include "kernels/compute/winograd_f32.h"
#include "kernels/compute/winograd_impl.h"

#include <algorithm>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/winograd_scalar_lanes.h"
#include "os/thread_slot.h"
#include "util/float_buffer.h"

namespace etnp {
namespace {

constexpr int64_t NR = 16;  // the packed panels' width (gemm.h)

void tile_rows_scalar(const WinogradGeom& g, const float* X, const std::vector<PackedB>& U, float* Y,
                      const GemmEpilogue& ep, int64_t tr0, int64_t tr1, float* v, float* mb, const float* zeros) {
  winograd_impl::tile_rows<WinogradScalarLanes>(g, X, U, Y, ep, tr0, tr1, v, mb, zeros);
}

WinogradTileRows pick_tile_rows() {
#if defined(__x86_64__)
  if (cpu_has_avx512f()) return &winograd_tile_rows_avx512;
  if (cpu_has_avx2_fma()) return &winograd_tile_rows_avx2;
#endif
  return &tile_rows_scalar;
}

}  // namespace

std::vector<PackedB> winograd_filters_3x3(ThreadPool* pool, const PackedB& direct, int64_t IC) {
  const int64_t OC = direct.N;
  if (!direct.half.empty() || IC <= 0 || OC <= 0 || direct.K != 9 * IC ||
      (int64_t)direct.data.size() < (OC + NR - 1) / NR * NR * direct.K)
    return {};
  // g(i, j) of (ic, oc): the packed panels' element (k = (i * 3 + j) * IC + ic, oc)
  auto g = [&](int64_t i, int64_t j, int64_t ic, int64_t oc) {
    return direct.data[(size_t)((oc / NR) * NR * direct.K + ((i * 3 + j) * IC + ic) * NR + oc % NR)];
  };
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
  std::vector<float> u((size_t)(16 * IC * OC));  // U[xi] as [IC x OC], row-major
  auto transform = [&](int64_t b, int64_t e) {
    for (int64_t ic = b; ic < e; ic++)
      for (int64_t oc = 0; oc < OC; oc++) {
        float t[4][3];  // G g
        for (int j = 0; j < 3; j++) {
          const float g0 = g(0, j, ic, oc), g1 = g(1, j, ic, oc), g2 = g(2, j, ic, oc);
          t[0][j] = g0;
          t[1][j] = 0.5f * (g0 + g1 + g2);
          t[2][j] = 0.5f * (g0 - g1 + g2);
          t[3][j] = g2;
        }
        for (int i = 0; i < 4; i++) {  // (G g) G^T
          const float r[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                              t[i][2]};
          for (int j = 0; j < 4; j++) u[(size_t)(((i * 4 + j) * IC + ic) * OC + oc)] = r[j];
        }
      }
  };
  if (pool && IC * OC > (1 << 14)) pool->parallel_for(IC, 1, transform);
  else transform(0, IC);
  std::vector<PackedB> out;
  out.reserve(16);
  for (int64_t xi = 0; xi < 16; xi++) out.push_back(pack_b(pool, IC, OC, u.data() + xi * IC * OC, OC, 1));
  return out;
}

bool conv3x3_winograd_f32(ThreadPool* pool, const WinogradGeom& g, const float* X, const std::vector<PackedB>& U,
                          float* Y, const GemmEpilogue& ep) {
  if (ep.bias_row || ep.accumulate || U.size() != 16) return false;
  for (const PackedB& u : U)
    if (u.K != g.C || u.N != g.OC) return false;
  if (g.N <= 0 || g.OH <= 0 || g.OW <= 0 || g.OC <= 0) return true;
  static const WinogradTileRows run = pick_tile_rows();
  const int64_t d = g.dilation;
  if (d < 1) return false;
  const int64_t TH = winograd_bands(g.OH, d), per_band = d * d * winograd_bands(g.OW, d), rows = g.N * TH;
  // Blocks of whole bands (2 * dilation output rows): the block's transformed input and products
  // (16 x tiles x (C + OC) floats) near 512 KiB, so they stay in L2 between the transforms and
  // the GEMMs; at least one block per thread where there are bands enough
  const int64_t want_tiles = std::max<int64_t>(24, (int64_t(1) << 13) / (g.C + g.OC));
  int64_t per = std::max<int64_t>(1, want_tiles / per_band);
  const int64_t threads = pool ? pool->num_threads() : 1;
  if (threads > 1) per = std::min(per, std::max<int64_t>(1, (rows + threads - 1) / threads));
  const int64_t blocks = (rows + per - 1) / per;
  auto work = [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(FloatBuffer, v);  // grow only
    ETNP_THREAD_LOCAL(FloatBuffer, mb);
    ETNP_THREAD_LOCAL(FloatBuffer, zeros);
    const size_t tiles = (size_t)(per * per_band);
    if (v.size() < 16 * tiles * (size_t)g.C) v.resize(16 * tiles * (size_t)g.C);
    if (mb.size() < 16 * tiles * (size_t)g.OC) mb.resize(16 * tiles * (size_t)g.OC);
    if (zeros.size() < (size_t)g.C) zeros.resize((size_t)g.C);
    std::memset(zeros.data(), 0, (size_t)g.C * sizeof(float));
    for (int64_t blk = b; blk < e; blk++) {
      const int64_t tr0 = blk * per, tr1 = std::min(rows, tr0 + per);
      run(g, X, U, Y, ep, tr0, tr1, v.data(), mb.data(), zeros.data());
      if (ep.rows_done) {  // the block's output rows, image by image
        for (int64_t tr = tr0; tr < tr1;) {
          const int64_t n = tr / TH, end = std::min(tr1, (n + 1) * TH);
          const int64_t oh0 = (tr % TH) * 2 * d, oh1 = std::min(g.OH, ((end - 1) % TH + 1) * 2 * d);
          ep.rows_done(ep.rows_ctx, (n * g.OH + oh0) * g.OW, (n * g.OH + oh1) * g.OW);
          tr = end;
        }
      }
    }
  };
  if (pool && blocks > 1) pool->parallel_for(blocks, 1, work);
  else work(0, blocks);
  return true;
}

}  // namespace etnp
