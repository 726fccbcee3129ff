// ContentHash (see content_hash.h).
#include "util/content_hash.h"

#include <algorithm>
#include <cstring>

namespace etnp {

namespace {
constexpr uint64_t kK = 0x9E3779B97F4A7C15ull;

inline uint64_t lane(uint64_t h, uint64_t w) {
  h = (h ^ w) * kK;
  return (h << 29) | (h >> 35);
}
}  // namespace

ContentHash::ContentHash() : h_{0, kK, ~kK, 1}, buf_{} {}

void ContentHash::update(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  total_ += n;
  if (nbuf_) {
    const size_t t = std::min(n, 32 - nbuf_);
    std::memcpy(buf_ + nbuf_, b, t);
    nbuf_ += t, b += t, n -= t;
    if (nbuf_ < 32) return;
    for (int l = 0; l < 4; l++) {
      uint64_t w;
      std::memcpy(&w, buf_ + 8 * l, 8);
      h_[l] = lane(h_[l], w);
    }
    nbuf_ = 0;
  }
  // (the lanes in locals: stores through B may alias the members, which would keep them in memory)
  uint64_t h0 = h_[0], h1 = h_[1], h2 = h_[2], h3 = h_[3];
  for (; n >= 32; b += 32, n -= 32) {
    uint64_t w[4];
    std::memcpy(w, b, 32);
    h0 = lane(h0, w[0]), h1 = lane(h1, w[1]), h2 = lane(h2, w[2]), h3 = lane(h3, w[3]);
  }
  h_[0] = h0, h_[1] = h1, h_[2] = h2, h_[3] = h3;
  std::memcpy(buf_, b, n);
  nbuf_ = n;
}

uint64_t ContentHash::value() const {
  uint64_t t = 0;
  for (size_t i = 0; i < nbuf_; i++) t = (t << 8 | buf_[i]) * 31 + buf_[i];
  const uint64_t r = h_[0] ^ (h_[1] * 3) ^ (h_[2] * 5) ^ (h_[3] * 7) ^ t ^ (total_ * kK);
  return (r ^ (r >> 31)) * kK;
}

uint64_t ContentHash::of(const void* p, size_t n) {
  ContentHash h;
  h.update(p, n);
  return h.value();
}

}  // namespace etnp
