// qgemm_q8's AMX path: tiles of 16 rows x two 16-column panels. The packed weights' groups of 4
// (PackedQ8: per panel, per group of 4 k, 16 columns x 4 bytes) are already the rows of an AMX B
// tile, so they are loaded in place: 16 groups (64 k) a tile, stride 64 bytes. The activations
// (codes qa + 128, rows of Kp bytes) are the A tiles; TDPBUSD (u8 x s8 -> int32, exact) sums the
// whole K into one accumulator tile per panel - the same int32 sums as the VNNI tiles' vpdpbusd -
// and the VNNI tiles' epilogue (qgemm_q8_epilogue_avx512.h) finishes them, so results are
// bit-identical. Tiles: 0, 1 the two panels' sums; 2 the rows' 64 k; 3 their last Kp % 64 k;
// 4, 5 the panels' 64 k; 6, 7 their last Kp % 64 k.
#include "kernels/compute/qgemm_q8_amx.h"

#include "util/compiler.h"

#if ETNP_AMX_KERNELS
#include <immintrin.h>

#include <algorithm>

#include "kernels/compute/amx_tile_config.h"
#include "kernels/compute/qgemm_q8_epilogue_avx512.h"
#include "util/compiler.h"

namespace etnp {
namespace {

constexpr int64_t kRows = 16;

AmxTileConfig tile_config(int64_t rem) {  // rem: Kp % 64 (a multiple of 4)
  AmxTileConfig c;
  c.set(0, 16, 64), c.set(1, 16, 64), c.set(2, 16, 64), c.set(4, 16, 64), c.set(5, 16, 64);
  if (rem > 0) c.set(3, 16, rem), c.set(6, rem / 4, 64), c.set(7, rem / 4, 64);
  return c;
}

// rows m .. m + 15 x panels p (and p + 1 where TWO): their sums in tiles 0 (and 1), stored to buf
// (the full steps and the last one differ only in tile numbers: GCC's tile intrinsics are macros
// that paste their numbers into the instruction text, so they cannot come from a template)
template <bool TWO>
ETNP_TARGET_INLINE("amx-tile,amx-int8")
void tile_sums(const uint8_t* x, int64_t Kp, const int8_t* b0, const int8_t* b1, int32_t* buf) {
  const int64_t full = Kp / 64, rem = Kp % 64;
  _tile_zero(0);
  if (TWO) _tile_zero(1);
  for (int64_t i = 0; i < full; i++) {
    _tile_loadd(2, x + i * 64, Kp);
    _tile_loadd(4, b0 + i * 1024, 64);
    _tile_dpbusd(0, 2, 4);
    if (TWO) {
      _tile_loadd(5, b1 + i * 1024, 64);
      _tile_dpbusd(1, 2, 5);
    }
  }
  if (rem > 0) {
    _tile_loadd(3, x + full * 64, Kp);
    _tile_loadd(6, b0 + full * 1024, 64);
    _tile_dpbusd(0, 3, 6);
    if (TWO) {
      _tile_loadd(7, b1 + full * 1024, 64);
      _tile_dpbusd(1, 3, 7);
    }
  }
  _tile_stored(0, buf, 64);
  if (TWO) _tile_stored(1, buf + kRows * 16, 64);
}

template <bool U>
ETNP_TARGET("avx512f,avx512bw,avx512dq,avx512vnni,amx-tile,amx-int8")
void rows_panels(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                 const float* bias, float lo, float hi, const QOutput& out) {
  const int64_t Kp = w.Kp, pstride = Kp / 4 * 64;  // (a panel's bytes)
  alignas(64) int32_t buf[2 * kRows * 16];
  for (int64_t p = p0; p < p1; p += 2) {
    const bool two = p + 1 < p1;
    const int8_t* b0 = w.data.data() + p * pstride;
    for (int64_t m = m0; m < m1; m += kRows) {
      const uint8_t* x = a.data + m * Kp;
      if (two) tile_sums<true>(x, Kp, b0, b0 + pstride, buf);
      else tile_sums<false>(x, Kp, b0, nullptr, buf);
      for (int v = 0; v < (two ? 2 : 1); v++) {
        const int64_t n0 = (p + v) * kQ8PanelCols;
        const __m512i start = q8_epilogue::acc_start<U>(m, n0, a, w);
        __m512i acc[kRows];
#pragma GCC unroll 16
        for (int i = 0; i < kRows; i++) acc[i] = _mm512_add_epi32(start, _mm512_load_si512(buf + (v * kRows + i) * 16));
        q8_epilogue::finish_panel<kRows, U>(acc, m, n0, a, w, bias, lo, hi, out);
      }
    }
  }
}

}  // namespace

ETNP_TARGET("amx-tile,amx-int8")
void qgemm_q8_amx_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                       const float* bias, float lo, float hi, const QOutput& out) {
  const AmxTileConfig cfg = tile_config(w.Kp % 64);
  ETNP_COMPILER_BARRIER();  // (GCC's tile intrinsics do not say that LDTILECFG reads the config)
  _tile_loadconfig(&cfg);
  if (a.uniform) rows_panels<true>(m0, m1, p0, p1, a, w, bias, lo, hi, out);
  else rows_panels<false>(m0, m1, p0, p1, a, w, bias, lo, hi, out);
  _tile_release();
}

}  // namespace etnp
#elif defined(__x86_64__)
#include <stdexcept>

namespace etnp {

// (never called: cpu_has_amx_int8() is false where the AMX kernels are not compiled)
void qgemm_q8_amx_rows(int64_t m0, int64_t m1, int64_t p0, int64_t p1, const QActivations& a, const PackedQ8& w,
                       const float* bias, float lo, float hi, const QOutput& out) {
  throw std::logic_error("the AMX kernels are not compiled in this build");
}

}  // namespace etnp
#endif
