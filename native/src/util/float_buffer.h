// FloatBuffer: a std::vector<float> whose resize() leaves new elements uninitialised, for
// buffers that are written in full right after (decoded constants, packed weights, activations):
// no memset pass over memory that is about to be overwritten. value-initialising calls
// (resize(n, 0.f), assign) still initialise. Storage is 64-byte aligned.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace etnp {

template <typename T>
struct UninitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind { using other = UninitAllocator<U>; };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  // 64-byte aligned: vector loads and stores of a row never straddle a cache line
  static constexpr std::align_val_t kAlign{64};
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};

using FloatBuffer = std::vector<float, UninitAllocator<float>>;

}  // namespace etnp
