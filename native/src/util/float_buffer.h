// FloatBuffer: a std::vector<float> whose resize() leaves new elements uninitialised, for
// buffers that are written in full right after (decoded constants, packed weights, activations):
// no memset pass over memory that is about to be overwritten. value-initialising calls
// (resize(n, 0.f), assign) still initialise.
#pragma once
#include <memory>
#include <vector>

namespace etnp {

template <typename T>
struct UninitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind { using other = UninitAllocator<U>; };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};

using FloatBuffer = std::vector<float, UninitAllocator<float>>;

}  // namespace etnp
