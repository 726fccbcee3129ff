// SHA-256 (FIPS 180-4), for checking named data against the digest ExecuTorch's XNNPACK
// serializer names it by (xnn_executor.cpp, before a weight cache is written from it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace etnp {

class Sha256 {
 public:
  Sha256();
  void update(const uint8_t* p, size_t n);
  void finish(uint8_t out[32]);  // (once)
  // The digest of n bytes at p as 64 lower-case hex digits
  static std::string hex(const uint8_t* p, size_t n);

 private:
  void blocks(const uint8_t* p, size_t n);  // n blocks of 64 bytes (the SHA extensions where the CPU has them)
  void block(const uint8_t* b);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t fill_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace etnp
