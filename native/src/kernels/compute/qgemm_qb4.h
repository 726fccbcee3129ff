// int8 x 4-bit GEMM for dynamically quantized activations x blockwise 4-bit weights (XNNPACK's
// qd8 x qb4w FullyConnected, torchao 8da4w): the weights stay two nibbles a byte and are unpacked
// in registers. With activations q (int8) of row scale sa and zero point za, weights w (-8..7)
// of per-block, per-column scales sw_b, each block's integer sum
//   acc_b = sum over the block's k of q * w                      (exact in int32)
// is turned into float and scaled by one FMA a block, the zero point's term by one constant a
// column, Z = sum over blocks of sw_b * (sum over the block's k of w) (float, made at packing):
//   F = (-za) * Z;  F = fma((float)acc_b, sw_b, F) for b = 0, 1, ...;  C = clamp(fma(F, sa, bias))
// (bias 0 where there is none; XNNPACK's qb4w kernels take the same route: an int32 block sum,
// one float FMA with the block's scales). Every path (portable, AVX2, AVX-512 VNNI) makes these
// float operations in this order, so results are bit-identical across them.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "threadpool/threadpool.h"
#include "util/float_buffer.h"
#include "util/packed_array.h"

namespace etnp {

// Packed once, per 16-column panel p (columns past N: weight 0, scale 0), 64-byte aligned pieces:
//   Z of the panel's 16 columns (float32, 64 bytes);
//   then per pair of blocks (2i, 2i + 1; the last pair may hold one):
//     the pair's scales: bfloat16 (f32_scales false: every scale is one exactly), 16 words each
//       holding column j's scale of block 2i in its low half, of block 2i + 1 in its high half
//       (64 bytes), or float32, block 2i's 16 then block 2i + 1's (128 bytes);
//     block 2i's chunks, then block 2i + 1's: a block has ceil(its K / 8) chunks of 64 bytes, byte
//       j * 4 + t of chunk c holding, for column 16p + j, the nibble w + 8 of k = 8c + t (of the
//       block) in its low half and of k + 4 in its high half (8 - a weight of 0 - past the K).
struct PackedQB4 {
  int64_t K = 0, N = 0, bs = 0;  // input channels, output channels, block size (the last may be shorter)
  int64_t nb = 0, chunks = 0;    // blocks, chunks a whole block
  int64_t last_chunks = 0;       // the last block's chunks
  int64_t panels = 0;
  bool f32_scales = false;
  int64_t pair_bytes = 0;   // a whole pair of blocks: its scales and chunks
  int64_t panel_bytes = 0;  // Z, then the pairs (the last may be shorter)
  // The panels are read from memory on every call (DelegateHandle::set_weights_stream): the one-row
  // (decode) path prefetches them non-temporally, as a stream that leaves the caches' other data
  // in place. (Not packed state: results are the same either way.)
  bool stream = false;
  PackedArray<uint8_t, WeightAllocator<uint8_t>> data;  // (a view where a weight cache file holds it)
  int64_t block_chunks(int64_t b) const { return b + 1 < nb ? chunks : last_chunks; }
  int64_t scale_bytes() const { return f32_scales ? 128 : 64; }
  // Sets the derived fields from K, N, bs and f32_scales (N, K > 0; bs 1..kQb4MaxBlock).
  void set_layout();
};

// The largest block: a block's int32 sum of products q * w (|q| <= 128, |w| <= 8) and its
// zero-point correction stay far inside int32 (32768 * 128 * 15 < 2^26). One block of all K is
// a per-channel (qc4w) filter.
constexpr int64_t kQb4MaxBlock = 32768;

inline void PackedQB4::set_layout() {
  nb = (K + bs - 1) / bs;
  chunks = (bs + 7) / 8;
  last_chunks = (K - (nb - 1) * bs + 7) / 8;
  panels = (N + 15) / 16;
  pair_bytes = scale_bytes() + 2 * chunks * 64;
  const int64_t last_pair = scale_bytes() + (nb % 2 == 0 ? chunks * 64 : 0) + block_chunks(nb - 1) * 64;
  panel_bytes = 64 + (nb - 1) / 2 * pair_bytes + last_pair;
}

// Whether this build uses it: x86-64 and aarch64 (qgemm_qb4_neon.cpp); other CPUs keep the
// int8 blocks (n.qblocks) on the portable int8 GEMM.
constexpr bool kQb4Used =
#if defined(__x86_64__) || defined(_M_X64) || defined(__aarch64__)
    true;
#else
    false;
#endif

// nibble(k, n): weight w(k, n) + 8 (0..15); scale(n, b): column n's scale for block b.
// bs: 1..kQb4MaxBlock. Panels packed in parallel on POOL where given (nibble and scale are then
// called from its threads).
template <class Nibble, class Scale>
PackedQB4 pack_qb4(int64_t K, int64_t N, int64_t bs, Nibble nibble, Scale scale, ThreadPool* pool = nullptr);
// The same from the nibbles as programs store them: column n's K nibbles two a byte, k's in the
// low half for k even, from rows + n * row_bytes.
template <class Scale>
PackedQB4 pack_qb4_bytes(int64_t K, int64_t N, int64_t bs, const uint8_t* rows, int64_t row_bytes, Scale scale,
                         ThreadPool* pool = nullptr);

// C[m][n] (row stride ldc) = the product above for the M rows of codes x[m * ldx + k] = q + 128
// (k < K), row scale sa[m] and zero point za[m]; bias (N values) or none; clamp [lo, hi].
void qgemm_qb4(ThreadPool* pool, int64_t M, const uint8_t* x, int64_t ldx, const float* sa, const int32_t* za,
               const PackedQB4& w, const float* bias, float lo, float hi, float* C, int64_t ldc);

// ---- packing ----
namespace qb4_detail {
inline uint16_t bf16_bits(float f, bool& exact) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  exact = exact && (u & 0xFFFFu) == 0;
  return (uint16_t)(u >> 16);
}
}  // namespace qb4_detail

// The layout around the chunks; fill(n, k0, k1, ch, col) writes column n's bytes of the block
// [k0, k1) (ch chunks: byte t of chunk c at col + c * 64 + t) and returns the sum of its weights.
template <class Fill, class Scale>
PackedQB4 pack_qb4_columns(int64_t K, int64_t N, int64_t bs, Fill fill, Scale scale, ThreadPool* pool) {
  PackedQB4 p;
  p.K = K, p.N = N, p.bs = bs;
  const int64_t nb = (K + bs - 1) / bs;
  bool exact = true;
  for (int64_t n = 0; n < N && exact; n++)
    for (int64_t b = 0; b < nb && exact; b++) qb4_detail::bf16_bits(scale(n, b), exact);
  p.f32_scales = !exact;
  p.set_layout();
  p.data.assign((size_t)(p.panels * p.panel_bytes), 0x88);  // (nibbles of 0: the padding)
  const int64_t sbytes = p.scale_bytes();
  auto panels = [&](int64_t pb, int64_t pe) {
    for (int64_t pn = pb; pn < pe; pn++) {
      uint8_t* panel = p.data.data() + pn * p.panel_bytes;
      double Z[16] = {};  // (exact products, summed in double, rounded once)
      for (int64_t b = 0; b < nb; b++) {
        uint8_t* pair = panel + 64 + (b / 2) * p.pair_bytes;
        uint8_t* d = pair + sbytes + (b % 2) * p.chunks * 64;
        if (b % 2 == 0) std::memset(pair, 0, (size_t)sbytes);
        const int64_t k0 = b * bs, k1 = std::min(K, k0 + bs);
        for (int64_t j = 0; j < 16; j++) {
          const int64_t n = pn * 16 + j;
          const float s = n < N ? scale(n, b) : 0.f;
          if (p.f32_scales) {
            std::memcpy(pair + (b % 2) * 64 + j * 4, &s, 4);
          } else {
            bool e = true;
            const uint16_t h = qb4_detail::bf16_bits(s, e);
            std::memcpy(pair + j * 4 + (b % 2) * 2, &h, 2);
          }
          if (n < N) Z[j] += (double)s * (double)fill(n, k0, k1, p.block_chunks(b), d + j * 4);
        }
      }
      for (int64_t j = 0; j < 16; j++) {
        const float z = (float)Z[j];
        std::memcpy(panel + j * 4, &z, 4);
      }
    }
  };
  if (pool && p.panels > 1 && K * N > (int64_t(1) << 16)) pool->parallel_for(p.panels, 1, panels);
  else panels(0, p.panels);
  return p;
}

template <class Nibble, class Scale>
PackedQB4 pack_qb4(int64_t K, int64_t N, int64_t bs, Nibble nibble, Scale scale, ThreadPool* pool) {
  auto fill = [&](int64_t n, int64_t k0, int64_t k1, int64_t ch, uint8_t* col) {
    int64_t wsum = 0;  // (each byte written once: the nibbles of k and k + 4, 8 past the block's K)
    for (int64_t c = 0; c < ch; c++)
      for (int64_t t = 0; t < 4; t++) {
        const int64_t k = k0 + c * 8 + t;
        const uint8_t lo = k < k1 ? (uint8_t)(nibble(k, n) & 15) : 8;
        const uint8_t hi = k + 4 < k1 ? (uint8_t)(nibble(k + 4, n) & 15) : 8;
        wsum += (int64_t)lo + hi - 16;
        col[c * 64 + t] = (uint8_t)(lo | (hi << 4));
      }
    return wsum;
  };
  return pack_qb4_columns(K, N, bs, fill, scale, pool);
}

template <class Scale>
PackedQB4 pack_qb4_bytes(int64_t K, int64_t N, int64_t bs, const uint8_t* rows, int64_t row_bytes, Scale scale,
                         ThreadPool* pool) {
  auto nibble = [&](int64_t k, int64_t n) {
    const uint8_t byte = rows[n * row_bytes + k / 2];
    return (k & 1) ? byte >> 4 : byte & 15;
  };
  auto fill = [&](int64_t n, int64_t k0, int64_t k1, int64_t ch, uint8_t* col) {
    int64_t wsum = 0;
    int64_t c = 0;
    if (k0 % 2 == 0) {  // whole chunks of 8 nibbles from 4 bytes each: k .. k + 3 low halves, k + 4 .. k + 7 high
      const int64_t whole = std::min(ch, (k1 - k0) / 8);
      const uint8_t* s = rows + n * row_bytes + k0 / 2;
      int32_t nib = 0;  // (the nibbles' sum: a loop of its own, which compilers vectorise)
      for (int64_t i = 0; i < 4 * whole; i++) nib += (s[i] & 15) + (s[i] >> 4);
      wsum += nib - 16 * 4 * whole;
      for (; c < whole; c++) {
        // bytes s0..s3 as one word: low nibbles L = [l0 l1 l2 l3], high ones H; the chunk's
        // bytes are [l0 | l2 << 4, h0 | h2 << 4, l1 | l3 << 4, h1 | h3 << 4]
        const uint8_t* q = s + 4 * c;
        const uint32_t w = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        const uint32_t L = w & 0x0F0F0F0Fu, H = (w >> 4) & 0x0F0F0F0Fu;
        const uint32_t X = (L & 0xFFu) | ((H & 0xFFu) << 8) | ((L & 0xFF00u) << 8) | ((H & 0xFF00u) << 16);
        const uint32_t Y = ((L >> 16) & 0xFFu) | ((H >> 8) & 0xFF00u) | ((L >> 8) & 0xFF0000u) | (H & 0xFF000000u);
        const uint32_t o = X | (Y << 4);
        uint8_t* d = col + c * 64;  // (byte by byte: the same on big-endian machines)
        d[0] = (uint8_t)o, d[1] = (uint8_t)(o >> 8), d[2] = (uint8_t)(o >> 16), d[3] = (uint8_t)(o >> 24);
      }
    }
    for (; c < ch; c++) {
      const int64_t k = k0 + c * 8;
      for (int64_t t = 0; t < 4; t++) {
        const uint8_t lo = k + t < k1 ? (uint8_t)nibble(k + t, n) : 8;
        const uint8_t hi = k + t + 4 < k1 ? (uint8_t)nibble(k + t + 4, n) : 8;
        wsum += (int64_t)lo + hi - 16;
        col[c * 64 + t] = (uint8_t)(lo | (hi << 4));
      }
    }
    return wsum;
  };
  return pack_qb4_columns(K, N, bs, fill, scale, pool);
}

}  // namespace etnp
