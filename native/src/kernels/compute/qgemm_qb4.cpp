// qgemm_qb4 (qgemm_qb4.h): the call's activations prepared once, its work cut into thread-pool
// tasks, each run by the best path this CPU has (qgemm_qb4_avx512.cpp, qgemm_qb4_avx2.cpp,
// qgemm_qb4_neon_dot.cpp, qgemm_qb4_neon.cpp), or
// by the portable one (qgemm_qb4_generic.cpp); 16 rows and more on AMX tiles where the CPU has
// them (qgemm_qb4_amx.cpp, which prepares its own).
#include "kernels/compute/qgemm_qb4.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/compute/cpu_features.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "os/cpu_id.h"
#include "os/thread_slot.h"
#include "util/compiler.h"

namespace etnp {

namespace {

constexpr int64_t kAmxMinRows = 16;  // (an AMX tile's rows)

enum class Path { Generic, Avx2, Vnni, Neon, NeonDot };
Path path() {
#if defined(__x86_64__)
  if (cpu_has_avx512f() && os::cpu_id().avx512vnni) return Path::Vnni;
  if (cpu_has_avx2_fma()) return Path::Avx2;
#elif defined(__aarch64__)
  if (cpu_has_neon_dot()) return Path::NeonDot;
  if (cpu_has_neon()) return Path::Neon;
#endif
  return Path::Generic;
}

// A single row's tasks: ranges of panels (an even count, as gemm_tasks makes them), two or three a
// thread - of the two, the count that leaves the busiest thread the fewest panels (36 panels on 2
// threads: 6 tasks of 6, not 4 of 10, 10, 10 and 6), the fewer tasks on a tie.
GemmTasks row_tasks(int64_t panels, const ThreadPool* tp) {
  if (!tp) return {std::max<int64_t>(2, (panels + 1) / 2 * 2), 1};  // (no pool: one task)
  const int64_t nt = tp->num_threads();
  GemmTasks best{0, 0};
  int64_t least = 0;
  for (int64_t want = 2 * nt; want <= 3 * nt; want += nt) {
    const int64_t each = (panels + want - 1) / want, per = std::max<int64_t>(2, (each + 1) / 2 * 2);
    const int64_t split = (panels + per - 1) / per, busiest = (split + nt - 1) / nt * per;
    if (!best.split || busiest < least) best = {per, split}, least = busiest;
  }
  return best;
}

}  // namespace

void qgemm_qb4(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
               const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc) {
  if (M <= 0 || w.N <= 0) return;
#if defined(__x86_64__)
  if (M >= kAmxMinRows && cpu_has_amx_int8()) {  // (a prefill; decode steps stay on the VNNI path)
    qb4::gemm_amx(pool, M, x, ldx, sa, za, w, bias, lo, hi, C, ldc);
    return;
  }
#endif
  static const Path kind = path();
  const int64_t T = kind == Path::Vnni ? qb4::kTileRowsVnni
                    : kind == Path::Avx2 ? qb4::kTileRowsAvx2
                    : kind == Path::Neon ? qb4::kTileRowsNeon
                    : kind == Path::NeonDot ? qb4::kTileRowsNeonDot
                                         : qb4::kTileRowsGeneric;
  // a task: a group of rows (every row up to 96) x a range of panels; the group's rows in tiles
  // of at most T, as even as they come
  const int64_t group = M <= 96 ? M : 64, groups = (M + group - 1) / group;
  ETNP_THREAD_LOCAL(std::vector<int64_t>, tile_m0);
  ETNP_THREAD_LOCAL(std::vector<int64_t>, tile_at);
  ETNP_THREAD_LOCAL(std::vector<int64_t>, group_tile);
  tile_m0.clear(), tile_at.clear(), group_tile.clear();
  const int64_t nb = w.nb, ldq = nb * w.chunks * 8;  // (a row's bytes)
  for (int64_t g = 0; g < groups; g++) {
    const int64_t m0 = g * group, rows = std::min(group, M - m0), nt = (rows + T - 1) / T;
    group_tile.push_back((int64_t)tile_m0.size());
    for (int64_t t = 0; t < nt; t++) {
      tile_m0.push_back(m0 + rows * t / nt);
      tile_at.push_back((m0 + rows * t / nt) * ldq);
    }
  }
  group_tile.push_back((int64_t)tile_m0.size());
  tile_m0.push_back(M);
  // the activations as int8, in the tiles' layout (qgemm_qb4_kernels.h), and their per-row terms
  // (on the calling thread: M * K bytes)
  ETNP_THREAD_LOCAL(std::vector<int8_t>, qbuf);
  ETNP_THREAD_LOCAL(std::vector<int8_t>, row);
  ETNP_THREAD_LOCAL(std::vector<int32_t>, cbuf);
  ETNP_THREAD_LOCAL(std::vector<float>, zbuf);
  qbuf.resize((size_t)(M * ldq));
  cbuf.resize((size_t)(M * nb));
  zbuf.resize((size_t)M);
  row.resize((size_t)(nb * w.bs + 8));
  const int64_t K = w.K, bs = w.bs, chunks = w.chunks;  // (locals: the int8 stores below may alias w's fields)
  for (size_t t = 0; t + 1 < tile_m0.size(); t++) {
    const int64_t R = tile_m0[t + 1] - tile_m0[t];
    for (int64_t i = 0; i < R; i++) {
      const int64_t m = tile_m0[t] + i;
      zbuf[(size_t)m] = -(float)za[m];
      // the row as int8, zeros past K (to the end of its last chunk), then each block's sum and
      // its chunks' 8 bytes to their places in the tile
      int8_t* r = row.data();
      const uint8_t* src = x + m * ldx;
      for (int64_t k = 0; k < K; k++) r[k] = (int8_t)(src[k] ^ 0x80u);
      std::memset(r + K, 0, 8);
      for (int64_t b = 0; b < nb; b++) {
        const int64_t k0 = b * bs, kb = std::min(bs, K - k0), ch = b + 1 < nb ? chunks : w.last_chunks;
        int32_t sum = 0;
        for (int64_t k = 0; k < kb; k++) sum += r[k0 + k];
        cbuf[(size_t)(m * nb + b)] = -8 * sum;
        int8_t* dst = qbuf.data() + tile_at[t] + b * chunks * 8 * R + i * 8;
        for (int64_t c = 0; c < ch; c++, dst += R * 8) {
          if (c * 8 + 8 <= kb) {
            std::memcpy(dst, r + k0 + c * 8, 8);
          } else {  // (the block's last, partial chunk: its bytes past the block's K are zeros)
            std::memset(dst, 0, 8);
            std::memcpy(dst, r + k0 + c * 8, (size_t)(kb - c * 8));
          }
        }
      }
    }
  }
  qb4::Acts a;
  a.q = qbuf.data();
  a.tile_m0 = tile_m0.data();
  a.tile_at = tile_at.data();
  a.corr = cbuf.data();
  a.nza = zbuf.data();
  a.sa = sa;
  qb4::Out o;
  o.bias = bias, o.lo = lo, o.hi = hi, o.C = C, o.ldc = ldc;
#if defined(__x86_64__)
  auto run = kind == Path::Vnni ? &qb4::tiles_vnni : kind == Path::Avx2 ? &qb4::tiles_avx2 : &qb4::tiles_generic;
#elif defined(__aarch64__)
  auto run = kind == Path::Neon ? &qb4::tiles_neon : &qb4::tiles_generic;
#if ETNP_NEON_DOT_KERNELS
  if (kind == Path::NeonDot) run = &qb4::tiles_neon_dot;
#endif
#else
  auto run = &qb4::tiles_generic;
#endif
  ThreadPool* tp = gemm_pool(pool, M, w.N, w.K);
  const int64_t panels = w.panels;
  // (one row, a decode step: at most two tasks a thread - the kernels stream a task's panels as a
  // few ranges side by side, which keeps more lines in flight the longer the ranges are)
  const GemmTasks grid = M == 1 ? row_tasks(panels, tp) : gemm_tasks(groups, panels, tp);
  const int64_t split = grid.split, per = grid.per;
  const int64_t* gt = group_tile.data();  // (the workers' own thread_locals are not this thread's)
  auto tasks = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t g = t / split, p0 = (t % split) * per, p1 = std::min(panels, p0 + per);
      run(a, w, gt[g], gt[g + 1], p0, p1, o);
    }
  };
  if (tp) tp->parallel_for(groups * split, 1, tasks);
  else tasks(0, groups * split);
}

}  // namespace etnp
