// qgemm_qb4's AMX path (Intel AMX-INT8 tiles) for 16 rows and more (a prefill): tiles of 16 rows
// x one 16-column panel. The packed weights (qgemm_qb4.h) stay 4-bit: a task unpacks the panel
// in use into a per-thread scratch of int8 weights w = nibble - 8 (K x 16 bytes; zeros past each
// block's chunks), which is already the layout a B tile wants - a chunk's low nibbles are the 4 k
// of its even row (column j's at bytes 4j .. 4j + 3), its high nibbles those of its odd row. The
// activations are laid out row by row, each block on chunks * 8 bytes (zeros past its K), rows
// padded to a multiple of 16 with zeros. Per block, TDPBSSD (int8 x int8 -> int32, exact) gives
// the 16 x 16 block sums acc_b = sum q * w directly (the VNNI path's sum q * nibble + corr, the
// same integers); they are stored to a small buffer, converted and scaled by one FMA a row in
// qgemm_qb4.h's order, so results are bit-identical to every other path.
// Four accumulator tiles rotate, so that three blocks' multiplies run while a block's sums are
// scaled. Tile numbers: 0 .. 3 the block sums; 4, 5 an A / B pair of 64 bytes of K (8 chunks);
// 6, 7 the pair for a block's remaining chunks (blocks not a multiple of 8 chunks).
#include "util/compiler.h"

#if ETNP_AMX_KERNELS
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/compute/amx_tile_config.h"
#include "kernels/compute/gemm_tasks.h"
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "os/thread_slot.h"
#include "util/compiler.h"
#include "util/float_buffer.h"

namespace etnp::qb4 {
namespace {

constexpr int64_t kRows = 16;  // a tile's rows
using AlignedBytes = std::vector<int8_t, UninitAllocator<int8_t>>;  // (64-byte aligned)

AmxTileConfig tile_config(int64_t rem) {  // rem: a block's chunks past its whole 64-byte pieces
  AmxTileConfig c;
  for (int t = 0; t < 6; t++) c.set(t, 16, 64);
  if (rem > 0) {
    c.set(6, 16, rem * 8);  // A: 16 rows of rem * 8 k
    c.set(7, rem * 2, 64);  // B: rem * 2 rows of 4 k x 16 columns
  }
  return c;
}

// One call's work, shared by its tasks.
struct Job {
  const PackedQB4* w = nullptr;
  const int8_t* q = nullptr;  // rows of ldq bytes, padded rows included
  int64_t ldq = 0, M = 0;
  const float* nza = nullptr;  // padded rows: 0
  const float* sa = nullptr;
  Out o;
  AmxTileConfig cfg;
  int64_t full = 0, rem = 0;  // a block's whole 64-byte pieces, and its remaining chunks
};

// panel's weights as int8 into out: per block 2 * chunks rows of 64 bytes
ETNP_TARGET("avx512f,avx512bw")
void unpack_panel(const PackedQB4& w, const uint8_t* panel, int8_t* out) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < w.nb; b++) {
    const uint8_t* d = chunks_at(w, panel, b);
    int8_t* o = out + b * w.chunks * 128;
    const int64_t ch = w.block_chunks(b);
    for (int64_t c = 0; c < ch; c++) {
      const __m512i raw = _mm512_loadu_si512(d + c * 64);
      _mm512_storeu_si512(o + c * 128, _mm512_sub_epi8(_mm512_and_si512(raw, m4), eight));
      _mm512_storeu_si512(o + c * 128 + 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), m4), eight));
    }
    for (int64_t c = ch; c < w.chunks; c++) {
      _mm512_storeu_si512(o + c * 128, zero);
      _mm512_storeu_si512(o + c * 128 + 64, zero);
    }
  }
}

// the 16 column scales of the even (odd false) or odd block of a pair
ETNP_TARGET_INLINE("avx512f") __m512 block_scales(bool f32, const uint8_t* pair, bool odd) {
  if (f32) return _mm512_loadu_ps(pair + (odd ? 64 : 0));
  const __m512i v = _mm512_loadu_si512(pair);
  return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u))
                                 : _mm512_slli_epi32(v, 16));
}

// the tile intrinsics want their tile numbers as literals
template <int CT>
ETNP_TARGET_INLINE("amx-tile,amx-int8") void acc_zero() {
  if constexpr (CT == 0) _tile_zero(0);
  else if constexpr (CT == 1) _tile_zero(1);
  else if constexpr (CT == 2) _tile_zero(2);
  else _tile_zero(3);
}
template <int CT, bool REM>  // tile CT += A x B (tiles 4, 5; REM: 6, 7)
ETNP_TARGET_INLINE("amx-tile,amx-int8") void acc_dot() {
  if constexpr (REM) {
    if constexpr (CT == 0) _tile_dpbssd(0, 6, 7);
    else if constexpr (CT == 1) _tile_dpbssd(1, 6, 7);
    else if constexpr (CT == 2) _tile_dpbssd(2, 6, 7);
    else _tile_dpbssd(3, 6, 7);
  } else {
    if constexpr (CT == 0) _tile_dpbssd(0, 4, 5);
    else if constexpr (CT == 1) _tile_dpbssd(1, 4, 5);
    else if constexpr (CT == 2) _tile_dpbssd(2, 4, 5);
    else _tile_dpbssd(3, 4, 5);
  }
}
template <int CT>
ETNP_TARGET_INLINE("amx-tile,amx-int8") void acc_store(int32_t* buf) {
  if constexpr (CT == 0) _tile_stored(0, buf, 64);
  else if constexpr (CT == 1) _tile_stored(1, buf, 64);
  else if constexpr (CT == 2) _tile_stored(2, buf, 64);
  else _tile_stored(3, buf, 64);
}

// What a 16-row tile's blocks read: its activations (block b at a + b * astep, rows ldq apart),
// the panel's unpacked weights (block b at wb + b * bstep) and scales.
struct TileBlocks {
  const int8_t* a;
  const int8_t* wb;
  const uint8_t* panel;
  int64_t ldq, astep, bstep, full, rem, nb, pair_bytes;
  bool f32;
  // the next panel's bytes, fetched into L2 a few lines a block (pf_lines a block from pf, up to
  // pf_end) while this panel's tiles are multiplied; null: none
  const uint8_t* pf;
  const uint8_t* pf_end;
  int64_t pf_lines;
};
// block b's scales (qgemm_qb4_kernels.h's pair_at)
inline const uint8_t* pair_at_b(const uint8_t* panel, int64_t b, const TileBlocks& t) {
  return panel + 64 + (b >> 1) * t.pair_bytes;
}

// block sums tile CT = block b's activations x its weights (whole 64-byte pieces, then the rest)
template <int CT>
ETNP_TARGET_INLINE("amx-tile,amx-int8")
void block_dot(const TileBlocks& t, int64_t b) {
  const int8_t* a = t.a + b * t.astep;
  const int8_t* w = t.wb + b * t.bstep;
  acc_zero<CT>();
  for (int64_t i = 0; i < t.full; i++) {
    _tile_loadd(4, a + i * 64, t.ldq);
    _tile_loadd(5, w + i * 1024, 64);
    acc_dot<CT, false>();
  }
  if (t.rem > 0) {
    _tile_loadd(6, a + t.full * 64, t.ldq);
    _tile_loadd(7, w + t.full * 1024, 64);
    acc_dot<CT, true>();
  }
}

// F[i] = fma((float)sums of row i, scales, F[i]) for block b's sums in buf
ETNP_TARGET_INLINE("avx512f")
void block_scale(const TileBlocks& t, int64_t b, const int32_t* buf, __m512* F) {
  const __m512 sw = block_scales(t.f32, pair_at_b(t.panel, b, t), b & 1);
#pragma GCC unroll 16
  for (int i = 0; i < kRows; i++)
    F[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(buf + i * 16)), sw, F[i]);
}

// Block b (in tile CT): block b + 3's product issued (into tile (CT + 3) % 4, free since block
// b - 1's sums were stored), block b's sums stored to buf and scaled. Four tiles in flight: the
// multiplies run while earlier blocks are scaled.
template <int CT>
ETNP_TARGET_INLINE("avx512f,amx-tile,amx-int8")
void block_step(const TileBlocks& t, int64_t b, int32_t* buf, __m512* F) {
  if (b >= t.nb) return;
  if (b + 3 < t.nb) block_dot<(CT + 3) % 4>(t, b + 3);
  if (t.pf) {
    for (int64_t l = 0; l < t.pf_lines; l++) {
      const uint8_t* at = t.pf + (b * t.pf_lines + l) * 64;
      if (at < t.pf_end) _mm_prefetch((const char*)at, _MM_HINT_T1);  // (to L2: L1 holds the tiles' data)
    }
  }
  acc_store<CT>(buf);
  block_scale(t, b, buf, F);
}

// rows m0 .. m0 + 15 x panel p, its weights unpacked at wb; fetching panel `next` (or none: -1)
// into the cache meanwhile
ETNP_TARGET("avx512f,avx512bw,amx-tile,amx-int8")
void tile(const Job& j, int64_t m0, int64_t p, const int8_t* wb, int64_t next) {
  const PackedQB4& w = *j.w;
  const uint8_t* panel = panel_at(w, p);
  const int64_t n0 = p * 16, cols = std::min<int64_t>(16, w.N - n0);
  __m512 F[kRows];
  const __m512 z = _mm512_loadu_ps(panel);
#pragma GCC unroll 16
  for (int i = 0; i < kRows; i++) F[i] = _mm512_mul_ps(_mm512_set1_ps(j.nza[m0 + i]), z);
  alignas(64) int32_t buf[4][kRows * 16];
  TileBlocks t;
  t.a = j.q + m0 * j.ldq, t.wb = wb, t.panel = panel;
  t.ldq = j.ldq, t.astep = w.chunks * 8, t.bstep = w.chunks * 128, t.full = j.full, t.rem = j.rem, t.nb = w.nb;
  t.pair_bytes = w.pair_bytes, t.f32 = w.f32_scales;
  t.pf = next >= 0 ? panel_at(w, next) : nullptr;
  t.pf_end = t.pf ? t.pf + w.panel_bytes : nullptr;
  t.pf_lines = (w.panel_bytes / 64 + t.nb) / t.nb;  // (every line of it within the tile's blocks)
  // blocks 0, 1, 2 issued; then each step issues the block 3 ahead and scales its own
  block_dot<0>(t, 0);
  if (t.nb > 1) block_dot<1>(t, 1);
  if (t.nb > 2) block_dot<2>(t, 2);
  for (int64_t b = 0; b < t.nb; b += 4) {
    block_step<0>(t, b, buf[0], F);
    block_step<1>(t, b + 1, buf[1], F);
    block_step<2>(t, b + 2, buf[2], F);
    block_step<3>(t, b + 3, buf[3], F);
  }
  const __mmask16 mask = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  const __m512 bv = j.o.bias ? _mm512_maskz_loadu_ps(mask, j.o.bias + n0) : _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(j.o.lo), vhi = _mm512_set1_ps(j.o.hi);
  const int64_t rows = std::min<int64_t>(kRows, j.M - m0);
  // (every index of F a constant: F stays in registers - an index known only at run time would
  // keep it in memory, loaded and stored by every block's FMAs)
#pragma GCC unroll 16
  for (int i = 0; i < kRows; i++) {
    if (i >= rows) break;
    const __m512 r = _mm512_fmadd_ps(F[i], _mm512_set1_ps(j.sa[m0 + i]), bv);
    _mm512_mask_storeu_ps(j.o.C + (m0 + i) * j.o.ldc + n0, mask, _mm512_min_ps(vhi, _mm512_max_ps(vlo, r)));
  }
}

// d[k] = src[k] - 128 as int8, k < n
ETNP_TARGET("avx512f,avx512bw")
void codes_to_int8(const uint8_t* src, int64_t n, int8_t* d) {
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (int64_t k = 0; k < n; k += 64) {
    const int64_t c = std::min<int64_t>(64, n - k);
    const __mmask64 mk = c == 64 ? ~(__mmask64)0 : (((__mmask64)1 << c) - 1);
    _mm512_mask_storeu_epi8(d + k, mk, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, src + k), flip));
  }
}

// rows [r0, r1) (whole tiles) x panels [p0, p1), panel by panel: each panel unpacked once
ETNP_TARGET("amx-tile,amx-int8")
void rows_x_panels(const Job& j, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  ETNP_THREAD_LOCAL(AlignedBytes, scratch);  // (64-byte aligned: B tile rows are whole lines)
  scratch.resize((size_t)(j.w->nb * j.w->chunks * 128));
  _tile_loadconfig(&j.cfg);
  for (int64_t p = p0; p < p1; p++) {
    unpack_panel(*j.w, panel_at(*j.w, p), scratch.data());
    ETNP_COMPILER_BARRIER();  // (the tile loads read the scratch: GCC's tile intrinsics do not say so)
    // (the next panel fetched during the first row tile: its weights are read from memory once
    // a call, and without this the unpacking waits for them)
    for (int64_t m0 = r0; m0 < r1; m0 += kRows) tile(j, m0, p, scratch.data(), m0 == r0 && p + 1 < p1 ? p + 1 : -1);
  }
  _tile_release();
}

}  // namespace

void gemm_amx(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
              const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc) {
  const int64_t Mp = (M + kRows - 1) / kRows * kRows;
  const int64_t nb = w.nb, bs = w.bs, chunks = w.chunks, K = w.K, ldq = nb * chunks * 8;
  // the activations as int8 (q = code - 128), each block on chunks * 8 bytes (on the calling
  // thread: M * K bytes)
  ETNP_THREAD_LOCAL(AlignedBytes, qbuf);
  ETNP_THREAD_LOCAL(std::vector<float>, zbuf);
  qbuf.assign((size_t)(Mp * ldq), 0);
  zbuf.assign((size_t)Mp, 0.f);
  for (int64_t m = 0; m < M; m++) {
    zbuf[(size_t)m] = -(float)za[m];
    const uint8_t* src = x + m * ldx;
    int8_t* r = qbuf.data() + m * ldq;
    if (chunks * 8 == bs) {  // (blocks of whole chunks: the row's K in one run)
      codes_to_int8(src, K, r);
    } else {
      for (int64_t b = 0; b < nb; b++) codes_to_int8(src + b * bs, std::min(bs, K - b * bs), r + b * chunks * 8);
    }
  }
  Job j;
  j.w = &w, j.q = qbuf.data(), j.ldq = ldq, j.M = M, j.nza = zbuf.data(), j.sa = sa;
  j.o.bias = bias, j.o.lo = lo, j.o.hi = hi, j.o.C = C, j.o.ldc = ldc;
  j.full = chunks / 8, j.rem = chunks % 8;
  j.cfg = tile_config(j.rem);
  ETNP_COMPILER_BARRIER();  // (the tile loads read qbuf and the config: GCC's tile intrinsics do not say so)
  // a task: a group of rows (every row up to 256) x a range of panels
  const int64_t group = Mp <= 256 ? Mp : 128, groups = (Mp + group - 1) / group;
  ThreadPool* tp = gemm_pool(pool, M, w.N, w.K);
  const int64_t panels = w.panels;
  const GemmTasks grid = gemm_tasks(groups, panels, tp);
  const int64_t split = grid.split, per = grid.per;
  auto tasks = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t g = t / split, p0 = (t % split) * per, p1 = std::min(panels, p0 + per);
      rows_x_panels(j, g * group, std::min(Mp, g * group + group), p0, p1);
    }
  };
  if (tp) tp->parallel_for(groups * split, 1, tasks);
  else tasks(0, groups * split);
}

}  // namespace etnp::qb4
#elif defined(__x86_64__)
#include <stdexcept>

#include "kernels/compute/qgemm_qb4_kernels.h"

namespace etnp::qb4 {

// (never called: cpu_has_amx_int8() is false where the AMX kernels are not compiled)
void gemm_amx(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
              const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc) {
  throw std::logic_error("the AMX kernels are not compiled in this build");
}

}  // namespace etnp::qb4
#endif
