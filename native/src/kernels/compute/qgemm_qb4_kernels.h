// The pieces of qgemm_qb4 (qgemm_qb4.h) that each instruction set implements, and what they
// share: the call's prepared activations and output, and the packed layout's addressing.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/compute/qgemm_qb4.h"

namespace etnp::qb4 {

// A call's activations, prepared once (qgemm_qb4.cpp) in tiles of rows (the kernel's: up to
// kTileRows of the path), each tile's rows interleaved so that a kernel finds them at fixed
// offsets from one pointer: tile t (rows tile_m0[t] .. tile_m0[t + 1]) holds, from q +
// tile_at[t], per block b (w.chunks of 8 int8 values each), per chunk c, per row i of the
// tile, the 8 values q = code - 128 of k = 8c .. 8c + 7 of the block (zeros past its K):
//   at tile_at[t] + ((b * w.chunks + c) * R + i) * 8, R the tile's rows.
// Per row and block corr = -8 * (the block's sum of q), so that sum q * nibble + corr = sum q * w
// (the nibbles are w + 8): acc_b; per row nza = -(float)za and the scale sa.
struct Acts {
  const int8_t* q = nullptr;
  const int64_t* tile_m0 = nullptr;  // tiles + 1 entries
  const int64_t* tile_at = nullptr;
  const int32_t* corr = nullptr;     // [m * nb + b]
  const float* nza = nullptr;
  const float* sa = nullptr;
  int64_t rows(int64_t t) const { return tile_m0[t + 1] - tile_m0[t]; }
};

// The most rows a tile of each path holds.
constexpr int64_t kTileRowsVnni = 12, kTileRowsAvx2 = 4, kTileRowsGeneric = 1, kTileRowsNeon = 1, kTileRowsNeonDot = 4;

struct Out {
  const float* bias = nullptr;
  float lo = 0, hi = 0;
  float* C = nullptr;
  int64_t ldc = 0;
};

inline const uint8_t* panel_at(const PackedQB4& w, int64_t p) { return w.data.data() + p * w.panel_bytes; }
// from a panel's start: the scales of block b's pair, and block b's first chunk
inline int64_t pair_offset(const PackedQB4& w, int64_t b) { return 64 + (b >> 1) * w.pair_bytes; }
inline int64_t chunks_offset(const PackedQB4& w, int64_t b) {
  return pair_offset(w, b) + w.scale_bytes() + (b & 1) * w.chunks * 64;
}
inline const uint8_t* pair_at(const PackedQB4& w, const uint8_t* panel, int64_t b) {
  return panel + pair_offset(w, b);
}
inline const uint8_t* chunks_at(const PackedQB4& w, const uint8_t* panel, int64_t b) {
  return panel + chunks_offset(w, b);
}
// column j's scale of block b (the portable path's reading of the pair)
inline float scale_of(const PackedQB4& w, const uint8_t* panel, int64_t b, int64_t j) {
  const uint8_t* s = pair_at(w, panel, b);
  float f;
  if (w.f32_scales) {
    std::memcpy(&f, s + (b & 1) * 64 + j * 4, 4);
  } else {
    uint32_t u;
    std::memcpy(&u, s + j * 4, 4);
    u = (b & 1) == 0 ? u << 16 : u & 0xFFFF0000u;
    std::memcpy(&f, &u, 4);
  }
  return f;
}

// A decode step's task (tile t0 alone, of one row): its panels [p0, p1) as S ranges read side by
// side - streams(p, stride) takes panels p, p + stride, ..., p + (S - 1) * stride - and the rest
// one by one (one(p)); false (nothing done) for any other task.
template <int S, class Streams, class One>
inline bool decode_streams(const Acts& a, int64_t t0, int64_t t1, int64_t p0, int64_t p1, Streams streams, One one) {
  if (t1 - t0 != 1 || a.rows(t0) != 1) return false;
  const int64_t per = (p1 - p0) / S;
  for (int64_t i = 0; i < per; i++) streams(p0 + i, per);
  for (int64_t p = p0 + S * per; p < p1; p++) one(p);
  return true;
}

// A task as the VNNI and NEON dot-product paths run it: a decode step as S streams
// (decode_streams), any other panel by panel, every tile of a panel (tile(t, p)) while its part
// of the weights is in L1.
template <int S, class Streams, class One, class Tile>
inline void run_task(const Acts& a, int64_t t0, int64_t t1, int64_t p0, int64_t p1, Streams streams, One one,
                     Tile tile) {
  if (decode_streams<S>(a, t0, t1, p0, p1, streams, one)) return;
  for (int64_t p = p0; p < p1; p++)
    for (int64_t t = t0; t < t1; t++) tile(t, p);
}

// Tiles [t0, t1) x panels [p0, p1), panel by panel, every tile of a panel while its part of
// the weights is in L1. The AVX2 and VNNI ones are defined on x86-64 only, the NEON one on
// aarch64 only (the caller checks the CPU).
void tiles_generic(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                   const Out& o);
void tiles_avx2(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o);
void tiles_vnni(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o);
// (aarch64 only: qgemm_qb4_neon.cpp; qgemm_qb4_neon_dot.cpp where ETNP_NEON_DOT_KERNELS, called
// where cpu_has_neon_dot())
void tiles_neon(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                const Out& o);
void tiles_neon_dot(const Acts& a, const PackedQB4& w, int64_t t0, int64_t t1, int64_t p0, int64_t p1,
                    const Out& o);

// The whole product on AMX-INT8 tiles (qgemm_qb4_amx.cpp; x86-64 only, where cpu_has_amx_int8()):
// for M >= 16, the arguments of qgemm_qb4.
void gemm_amx(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
              const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc);

}  // namespace etnp::qb4
