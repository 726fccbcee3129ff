#include "util/sha256.h"

#include <cstring>

#include "os/cpu_id.h"
#include "util/compiler.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ETNP_SHA_NI 1
#endif

namespace etnp {
namespace {

// the first 32 bits of the fractional parts of the cube roots of the first 64 primes
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#if defined(ETNP_SHA_NI)
// Blocks [p, p + 64 * n) by the SHA extensions: SHA256RNDS2 does two rounds on the state held as
// (A, B, E, F) and (C, D, G, H); SHA256MSG1 / MSG2 extend the message schedule four words at a
// time: X[j] = MSG2(MSG1(X[j-4], X[j-3]) + (X[j-2], X[j-1]) shifted by one word, X[j-1]).
ETNP_TARGET("sha,sse4.1,ssse3") void blocks_sha_ni(uint32_t* h, const uint8_t* p, size_t n) {
  const __m128i order = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // big-endian words
  __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i*)h), 0xB1);              // C D A B
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i*)(h + 4)), 0x1B);       // E F G H
  __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                                // A B E F
  s1 = _mm_blend_epi16(s1, t, 0xF0);                                                     // C D G H
  for (; n; n--, p += 64) {
    const __m128i save0 = s0, save1 = s1;
    __m128i x[4];
    for (int j = 0; j < 16; j++) {
      __m128i& w = x[j & 3];
      if (j < 4) w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(p + 16 * j)), order);
      else
        w = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w, x[(j - 3) & 3]), _mm_alignr_epi8(x[(j - 1) & 3], x[(j - 2) & 3], 4)),
            x[(j - 1) & 3]);
      __m128i m = _mm_add_epi32(w, _mm_loadu_si128((const __m128i*)(kRound + 4 * j)));
      s1 = _mm_sha256rnds2_epu32(s1, s0, m);
      m = _mm_shuffle_epi32(m, 0x0E);
      s0 = _mm_sha256rnds2_epu32(s0, s1, m);
    }
    s0 = _mm_add_epi32(s0, save0);
    s1 = _mm_add_epi32(s1, save1);
  }
  t = _mm_shuffle_epi32(s0, 0x1B);   // F E B A
  s1 = _mm_shuffle_epi32(s1, 0xB1);  // D C H G
  s0 = _mm_blend_epi16(t, s1, 0xF0);  // D C B A
  s1 = _mm_alignr_epi8(s1, t, 8);     // H G F E
  _mm_storeu_si128((__m128i*)h, s0);
  _mm_storeu_si128((__m128i*)(h + 4), s1);
}
#endif

}  // namespace

Sha256::Sha256() {
  // the first 32 bits of the fractional parts of the square roots of the first 8 primes
  const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::memcpy(h_, h0, sizeof h_);
}

void Sha256::blocks(const uint8_t* p, size_t n) {
#if defined(ETNP_SHA_NI)
  // (ETNP_CPU=generic: the portable rounds, as every other kernel's - how the tests reach them)
  static const bool ni = os::cpu_id().sha && os::cpu_cap() >= 1;
  if (ni) {
    blocks_sha_ni(h_, p, n);
    return;
  }
#endif
  for (; n; n--, p += 64) block(p);
}

void Sha256::block(const uint8_t* b) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)b[4 * t] << 24 | (uint32_t)b[4 * t + 1] << 16 | (uint32_t)b[4 * t + 2] << 8 | (uint32_t)b[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h_[0], b1 = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int t = 0; t < 64; t++) {
    const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b1) ^ (a & c) ^ (b1 & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b1, b1 = a, a = t1 + t2;
  }
  h_[0] += a, h_[1] += b1, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

void Sha256::update(const uint8_t* p, size_t n) {
  bytes_ += n;
  if (fill_) {
    const size_t take = n < 64 - fill_ ? n : 64 - fill_;
    std::memcpy(buf_ + fill_, p, take);
    fill_ += take, p += take, n -= take;
    if (fill_ < 64) return;
    blocks(buf_, 1);
    fill_ = 0;
  }
  blocks(p, n / 64);
  p += n / 64 * 64, n %= 64;
  std::memcpy(buf_, p, n);
  fill_ = n;
}

void Sha256::finish(uint8_t out[32]) {
  const uint64_t bits = bytes_ * 8;
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (fill_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  update(len, 8);
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(h_[i] >> (24 - 8 * k));
}

std::string Sha256::hex(const uint8_t* p, size_t n) {
  Sha256 s;
  s.update(p, n);
  uint8_t d[32];
  s.finish(d);
  static const char kDigits[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 32; i++) out[2 * i] = kDigits[d[i] >> 4], out[2 * i + 1] = kDigits[d[i] & 15];
  return out;
}

}  // namespace etnp
