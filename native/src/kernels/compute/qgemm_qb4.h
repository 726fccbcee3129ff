// int8 x 4-bit GEMM for dynamically quantized activations x blockwise 4-bit weights (XNNPACK's
// qd8 x qb4w FullyConnected, torchao 8da4w): the weights stay two nibbles a byte and are unpacked
// in registers, one pass over K per output tile. Each block of K (its own scale per column) is
// summed exactly in int32, then
//   C = clamp(sum over blocks b, in order, of (float)(acc_b - (128 + za) * colsum_b) * (sa * sw_b)
//             (+ bias with block 0))
// with the float operations, their rounding and order exactly those of one qgemm_q8 per block
// accumulating into C (QActivations::scale_rows_first = false: the product of the scales; FMA
// where the vector paths use it, a multiply and an add on the portable path), so results are
// bit-identical to that on every CPU path.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/packed_array.h"

#include "threadpool/threadpool.h"

namespace etnp {

// Packed once, per 16-column panel p (columns past N: weight 0, scale 0), per block b:
//   chunks (ceil(block K / 8)) of 64 bytes: byte j * 4 + t of chunk c holds, for column 16p + j,
//   the nibble of k = b * bs + 8c + t in its low half and of k + 4 in its high half (nibble
//   w + 8, the program's; 8 - a weight of 0 - past the block's K);
//   then the block's 16 column scales: bfloat16 (f32_scales false: every scale is one exactly)
//   or float32.
struct PackedQB4 {
  int64_t K = 0, N = 0, bs = 0;  // input channels, output channels, block size (the last may be shorter)
  int64_t nb = 0, chunks = 0;    // blocks, chunks a whole block
  int64_t panels = 0;
  bool f32_scales = false;
  int64_t block_bytes = 0, panel_bytes = 0;
  PackedArray<uint8_t> data;  // (a view where a weight cache file holds it)
  int64_t block_chunks(int64_t b) const { return b + 1 < nb ? chunks : (K - b * bs + 7) / 8; }
};

// Whether this build uses it: x86-64 only for now. Its portable path replays the scalar per-block
// epilogue as written; on aarch64 GCC contracts the per-block path's (NEON) float operations into
// FMAs differently, so the results are not yet bit-identical there (tools/check_aarch64.sh's
// kernel_check: 228 of 395 cases off by an ulp) - aarch64 keeps the int8 blocks (n.qblocks).
constexpr bool kQb4Used =
#if defined(__x86_64__) || defined(_M_X64)
    true;
#else
    false;
#endif

// nibble(k, n): weight w(k, n) + 8 (0..15); scale(n, b): column n's scale for block b.
// bs: 1..1024.
template <class Nibble, class Scale>
PackedQB4 pack_qb4(int64_t K, int64_t N, int64_t bs, Nibble nibble, Scale scale);

// C[m][n] (row stride ldc) = the product above for the M rows of codes x[m * ldx + k] = qa + 128
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

template <class Nibble, class Scale>
PackedQB4 pack_qb4(int64_t K, int64_t N, int64_t bs, Nibble nibble, Scale scale) {
  PackedQB4 p;
  p.K = K, p.N = N, p.bs = bs;
  p.nb = (K + bs - 1) / bs;
  p.chunks = (bs + 7) / 8;
  p.panels = (N + 15) / 16;
  bool exact = true;
  for (int64_t n = 0; n < N && exact; n++)
    for (int64_t b = 0; b < p.nb && exact; b++) qb4_detail::bf16_bits(scale(n, b), exact);
  p.f32_scales = !exact;
  const int64_t sbytes = p.f32_scales ? 64 : 32;
  p.block_bytes = p.chunks * 64 + sbytes;
  // (the last block: its own chunks, then its scales)
  const int64_t last = p.block_chunks(p.nb - 1) * 64 + sbytes;
  p.panel_bytes = (p.nb - 1) * p.block_bytes + last;
  p.data.assign((size_t)(p.panels * p.panel_bytes), 0x88);  // (nibbles of 0: the padding)
  for (int64_t pn = 0; pn < p.panels; pn++) {
    uint8_t* d = p.data.data() + pn * p.panel_bytes;
    for (int64_t b = 0; b < p.nb; b++, d += p.block_bytes) {
      const int64_t ch = p.block_chunks(b), k0 = b * bs, k1 = std::min(K, k0 + bs);
      for (int64_t j = 0; j < 16; j++) {
        const int64_t n = pn * 16 + j;
        if (n >= N) {
          for (int64_t c = 0; c < ch; c++) *reinterpret_cast<uint32_t*>(d + c * 64 + j * 4) = 0x88888888u;
          continue;
        }
        for (int64_t k = k0; k < k1; k++) {
          const int64_t r = k - k0, c = r / 8, t = r % 8;
          uint8_t& byte = d[c * 64 + j * 4 + (t & 3)];
          const uint8_t v = (uint8_t)(nibble(k, n) & 15);
          byte = t < 4 ? (uint8_t)((byte & 0xF0) | v) : (uint8_t)((byte & 0x0F) | (v << 4));
        }
      }
      uint8_t* s = d + ch * 64;
      for (int64_t j = 0; j < 16; j++) {
        const int64_t n = pn * 16 + j;
        const float f = n < N ? scale(n, b) : 0.f;
        if (p.f32_scales) {
          std::memcpy(s + j * 4, &f, 4);
        } else {
          bool e = true;
          const uint16_t h = qb4_detail::bf16_bits(f, e);
          std::memcpy(s + j * 2, &h, 2);
        }
      }
    }
  }
  return p;
}

}  // namespace etnp
