// ValueBuffer: a delegate value's float32 elements - its own buffer (a FloatBuffer), or, while a
// call has it bound, memory of the caller's (the output tensor the value is copied to otherwise).
// It has the std::vector operations the nodes use (data, size, resize, operator[] ...), so a
// node writes a bound graph output straight into the output tensor, as XNNPACK does with its
// external values: no copy out, and no delegate buffer of the output's size.
//
// Bound (bind): data() is the external memory; resize(n) within its capacity only changes size()
// (the elements are the memory's); past it the value falls back to its own buffer (unbound). The
// caller then finds data() is not its memory and copies, as before. capacity() reports the own
// buffer only (memory statistics count what the delegate holds).
#pragma once
#include <cstddef>
#include <utility>

#include "util/float_buffer.h"

namespace etnp::xnn {

class ValueBuffer {
 public:
  float* data() { return ext_ ? ext_ : own_.data(); }
  const float* data() const { return ext_ ? ext_ : own_.data(); }
  size_t size() const { return ext_ ? ext_size_ : own_.size(); }
  bool empty() const { return size() == 0; }
  size_t capacity() const { return own_.capacity(); }
  float& operator[](size_t i) { return data()[i]; }
  const float& operator[](size_t i) const { return data()[i]; }
  float* begin() { return data(); }
  float* end() { return data() + size(); }

  void resize(size_t n) {
    if (ext_) {
      if (n <= ext_cap_) {
        ext_size_ = n;
        return;
      }
      unbind();
    }
    own_.resize(n);
  }

  // The value's elements are `cap` floats at p (its size unchanged until the next resize: a
  // value is always resized to its shape before it is written).
  void bind(float* p, size_t cap) {
    ext_ = p;
    ext_cap_ = cap;
    ext_size_ = 0;
  }
  void unbind() { ext_ = nullptr, ext_cap_ = ext_size_ = 0; }
  bool bound() const { return ext_ != nullptr; }

  // frees the own buffer (not the bound memory)
  void release() { FloatBuffer().swap(own_); }
  void swap(ValueBuffer& o) noexcept {
    own_.swap(o.own_);
    std::swap(ext_, o.ext_);
    std::swap(ext_cap_, o.ext_cap_);
    std::swap(ext_size_, o.ext_size_);
  }
  // exchanges the own buffer with a bank slot's (BufferBank)
  void swap_own(FloatBuffer& slot) noexcept { own_.swap(slot); }

 private:
  FloatBuffer own_;
  float* ext_ = nullptr;
  size_t ext_cap_ = 0, ext_size_ = 0;
};

}  // namespace etnp::xnn
