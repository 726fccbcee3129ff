// qgemm_qb4's portable path (qgemm_qb4_kernels.h: tiles_generic), plain C++ written for the
// compiler's auto-vectoriser (SSE2, WASM SIMD128, NEON, RVV): no widening multiplies, no
// horizontal sums in the inner loop.
//
// Per panel, the task first unpacks the panel's nibbles to int16, transposed (chunk c, lane
// t * 16 + j: column j's nibble of k = 8c + t in `lo`, of k = 8c + t + 4 in `hi` - the packed
// byte j * 4 + t), and its block scales to float, once for all its rows. A row's chunk then adds
// to 64 int16 lanes
//   acc[t * 16 + j] += lo[t * 16 + j] * x[8c + t] + hi[t * 16 + j] * x[8c + 4 + t]
// - 16-bit multiplies and adds, 8 lanes an SSE2 instruction, the row's values read as vectors of
// 8 copies (replicated once per task) - and the block's int32 sums are the 4 lanes of each column
// added vertically at its end. The lanes stay exact in int16: a product is at most 128 * 15 in
// magnitude, a chunk adds two to a lane, so 8 chunks (64 k) stay below 2^15; longer blocks add
// their lanes to int32 every 8 chunks.
//
// The block's float step F = fma((float)acc, s, F) (qgemm_qb4.h) is a plain multiply and add
// where that is the same thing: bfloat16 scales (8 significant bits) and blocks of at most 64 k
// (|acc| <= 64 * 128 * 8 = 2^16: at most 16 significant bits) make the product exact in float,
// so one rounding of the sum remains - the FMA's; scales of magnitude 2^100 or more (or NaN)
// could overflow the product, so a panel holding one takes fma_exact, as float32 scales do.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/compute/portable_ops.h"
#include "kernels/compute/qgemm_qb4_kernels.h"
#include "os/thread_slot.h"
#include "util/fma_exact.h"

namespace etnp::qb4 {
namespace {

constexpr int kLanes = 64;        // a chunk's bytes: 16 columns x 4
constexpr int64_t kFlush = 8;     // chunks a lane sums exactly in int16

// A row's values (the tile layout, one row a tile) as block_sums reads them: per chunk 64 int16,
// x[8c + t] 8 times for t = 0 .. 7
void replicate_row(const int8_t* x, int64_t chunks, int16_t* xr) {
  for (int64_t c = 0; c < chunks; c++)
    for (int t = 0; t < 8; t++)
      for (int u = 0; u < 8; u++) xr[c * 64 + t * 8 + u] = x[c * 8 + t];
}

// sum[j] = corr + the block's products of column j: ch chunks of the unpacked panel (lo, hi) and
// the row's replicated values (xr). Per chunk, over its 64 lanes i = t * 16 + j,
//   acc[i] += lo[i] * x[8c + t] + hi[i] * x[8c + 4 + t]
// in int16, the lanes added to sum every kFlush chunks (4 vertical adds a column).
// (GCC's loop vectoriser turns the chunk into 16 pmullw and 16 paddw on 8 accumulator registers,
// the replicated values read as vectors)
void block_sums(const int16_t* lo, const int16_t* hi, const int16_t* xr, int64_t ch, int32_t corr, int32_t* sum) {
  for (int j = 0; j < 16; j++) sum[j] = corr;
  for (int64_t c0 = 0; c0 < ch; c0 += kFlush) {
    int16_t acc[kLanes] = {};
    for (int64_t c = c0; c < std::min(ch, c0 + kFlush); c++) {
      const int16_t* l = lo + c * kLanes;
      const int16_t* h = hi + c * kLanes;
      const int16_t* x = xr + c * 64;
      for (int t = 0; t < 4; t++)
        for (int v = 0; v < 16; v += 8)
          for (int u = 0; u < 8; u++) {
            const int i = t * 16 + v + u;
            acc[i] = (int16_t)(acc[i] + l[i] * x[t * 8 + u] + h[i] * x[32 + t * 8 + u]);
          }
    }
    for (int j = 0; j < 16; j++)
      sum[j] += (int32_t)acc[j] + (int32_t)acc[16 + j] + (int32_t)acc[32 + j] + (int32_t)acc[48 + j];
  }
}

// A panel unpacked (this thread's buffers): per block, its chunks' lo and hi lanes (the block at
// b * chunks * 64) and the 16 columns' scales; `fast`: the block step may multiply and add.
struct Unpacked {
  std::vector<int16_t> lo, hi;
  std::vector<float> scale;
  bool fast = false;
};

void unpack_panel(const PackedQB4& w, const uint8_t* panel, Unpacked& u) {
  const size_t n = (size_t)(w.nb * w.chunks * kLanes);
  if (u.lo.size() < n) u.lo.resize(n), u.hi.resize(n);
  if (u.scale.size() < (size_t)(w.nb * 16)) u.scale.resize((size_t)(w.nb * 16));
  bool fast = !w.f32_scales && w.bs <= 64;
  for (int64_t b = 0; b < w.nb; b++) {
    const uint8_t* d = chunks_at(w, panel, b);
    int16_t* lo = u.lo.data() + b * w.chunks * kLanes;
    int16_t* hi = u.hi.data() + b * w.chunks * kLanes;
    for (int64_t c = 0; c < w.block_chunks(b); c++) {  // (lane t * 16 + j: byte j * 4 + t, column j's 32-bit word)
      uint32_t word[16];
      std::memcpy(word, d + c * kLanes, sizeof(word));
      for (int t = 0; t < 4; t++)
        for (int j = 0; j < 16; j++) {
          lo[c * kLanes + t * 16 + j] = (int16_t)((word[j] >> (8 * t)) & 15);
          hi[c * kLanes + t * 16 + j] = (int16_t)((word[j] >> (8 * t + 4)) & 15);
        }
    }
    float* s = u.scale.data() + b * 16;
    for (int64_t j = 0; j < 16; j++) {
      s[j] = scale_of(w, panel, b, j);
      fast = fast && std::fabs(s[j]) < 0x1p100f;  // (false for NaN)
    }
  }
  u.fast = fast;
}

// One row's 16 results of panel p: x the row's values in the tile layout (one row a tile).
void row_panel(const Acts& a, const PackedQB4& w, const Unpacked& u, const uint8_t* panel, int64_t m,
               const int16_t* xr, float* F) {
  for (int64_t j = 0; j < 16; j++) {
    float z;
    std::memcpy(&z, panel + j * 4, 4);
    F[j] = a.nza[m] * z;
  }
  for (int64_t b = 0; b < w.nb; b++) {
    const int64_t ch = w.block_chunks(b);
    const int16_t* lo = u.lo.data() + b * w.chunks * kLanes;
    const int16_t* hi = u.hi.data() + b * w.chunks * kLanes;
    const int16_t* xb = xr + b * w.chunks * 64;
    int32_t sum[16];
    block_sums(lo, hi, xb, ch, a.corr[m * w.nb + b], sum);
    const float* s = u.scale.data() + b * 16;
    if (u.fast)
      for (int j = 0; j < 16; j++) F[j] = (float)sum[j] * s[j] + F[j];  // (exact product: one rounding)
    else
      for (int j = 0; j < 16; j++) F[j] = fma_exact((float)sum[j], s[j], F[j]);
  }
}

}  // namespace

void tiles_generic(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                   const Out& o) {
  ETNP_THREAD_LOCAL(Unpacked, u);
  ETNP_THREAD_LOCAL(std::vector<int16_t>, xrep);  // the task's rows, replicated (replicate_row)
  const int64_t row_chunks = w.nb * w.chunks;
  if (xrep.size() < (size_t)((t1 - t0) * row_chunks * 64)) xrep.resize((size_t)((t1 - t0) * row_chunks * 64));
  for (int64_t t = t0; t < t1; t++) replicate_row(a.q + a.tile_at[t], row_chunks, xrep.data() + (t - t0) * row_chunks * 64);
  for (int64_t p = p0; p < p1; p++) {
    const uint8_t* panel = panel_at(w, p);
    unpack_panel(w, panel, u);
    const int64_t n0 = p * 16, cols = std::min<int64_t>(16, w.N - n0);
    float bias16[16] = {};
    for (int64_t j = 0; o.bias && j < cols; j++) bias16[j] = o.bias[n0 + j];
    for (int64_t t = t0; t < t1; t++) {  // (tiles of one row)
      const int64_t m = a.tile_m0[t];
      float F[16];
      row_panel(a, w, u, panel, m, xrep.data() + (t - t0) * row_chunks * 64, F);
      const float sa = a.sa[m];
      float r[16];
      for (int j = 0; j < 16; j++) r[j] = clamp_f32(fma_exact(F[j], sa, bias16[j]), o.lo, o.hi);
      std::memcpy(o.C + m * o.ldc + n0, r, (size_t)cols * sizeof(float));
    }
  }
}

}  // namespace etnp::qb4
