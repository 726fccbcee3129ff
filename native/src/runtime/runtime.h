// Runtime: a thread pool and the mutex that serialises method execution.
// The mutex is recursive: a Python-defined operator runs inside a method call (mutex held) and
// may trigger Python's garbage collector, which destroys other methods of the same Runtime on
// that thread (etnp_method_destroy takes the mutex). Running a method of the same Runtime from
// inside an operator is refused by the Python layer, not by this lock.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "threadpool/threadpool.h"
#include "util/float_buffer.h"

namespace etnp {

// Buffers for the values a delegate computes during one call (inputs, intermediates, outputs:
// dead once the call has copied its outputs out). Calls through one Runtime run one at a time
// (its mutex), so every delegate of every method on it borrows them for its call and gives
// them back: activation memory is the largest delegate's, not the sum over a program's
// delegates (a ViT-B/16 lowers to 86). Used under the runtime's mutex only.
struct BufferBank {
  std::vector<FloatBuffer> slots;
  std::vector<std::vector<uint8_t>> code_slots;  // (int8 byte codes: values kept as codes, dynamically quantized ones)
  bool in_use = false;  // a delegate holds the slots (a nested call keeps its own buffers)
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const FloatBuffer& b : slots) n += (uint64_t)b.capacity() * sizeof(float);
    for (const auto& c : code_slots) n += c.capacity();
    return n;
  }
};

class Runtime {
 public:
  explicit Runtime(int num_threads) : pool_(num_threads) {}
  ThreadPool& pool() { return pool_; }
  std::recursive_mutex& mutex() { return mu_; }
  BufferBank& buffer_bank() { return bank_; }

 private:
  ThreadPool pool_;
  std::recursive_mutex mu_;
  BufferBank bank_;
};

}  // namespace etnp
