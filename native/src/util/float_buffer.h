// FloatBuffer: a std::vector<float> whose resize() leaves new elements uninitialised, for
// buffers that are written in full right after (decoded constants, packed weights, activations):
// no memset pass over memory that is about to be overwritten. value-initialising calls
// (resize(n, 0.f), assign) still initialise. Storage is 64-byte aligned.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "os/pages.h"
#include "util/compiler.h"
#include "util/weight_arena.h"

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
#if !defined(ETNP_SANITIZED)  // sanitizers watch heap blocks
  // Large buffers (packed weights, activations) come straight from the OS as whole pages (on
  // Linux with their pages populated in one call: they are written in full right away, and one
  // populate costs far less than a page fault per 4 KiB).
  static constexpr std::size_t kMapped = std::size_t(1) << 20;
  T* allocate(std::size_t n) {
    std::size_t bytes = n * sizeof(T);
    if (bytes < kMapped) return static_cast<T*>(::operator new(bytes, kAlign));
    void* p = os::map_pages(bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    std::size_t bytes = n * sizeof(T);
    if (bytes < kMapped) ::operator delete(p, kAlign);
    else os::unmap_pages(p, bytes);
  }
#else
  // nothrow, then bad_alloc by hand: a sanitizer's throwing operator new aborts the process on a
  // refused size (ASan's max_allocation_size_mb) instead of throwing, and a program may legally
  // plan more memory than the fuzzers allow (the core turns bad_alloc into a load error)
  T* allocate(std::size_t n) {
    void* p = ::operator new(n * sizeof(T), kAlign, std::nothrow);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
#endif
  template <typename U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};

using FloatBuffer = std::vector<float, UninitAllocator<float>>;

// WeightAllocator: the storage of packed weights streamed from memory once a call (PackedQB4: an
// LLM's decode step reads each 4-bit weight once). Blocks of weight_arena::kMinBlockBytes and more
// allocated while a delegate loads (weight_arena::LoadScope) come from the weight arena (one
// stream on huge pages); the rest, and everything in a sanitizer build, as UninitAllocator
// (resize leaves new elements uninitialised).
template <typename T>
struct WeightAllocator : UninitAllocator<T> {
  template <typename U>
  struct rebind { using other = WeightAllocator<U>; };
  WeightAllocator() = default;
  template <typename U>
  WeightAllocator(const WeightAllocator<U>&) noexcept {}
#if !defined(ETNP_SANITIZED)  // (sanitizers watch heap blocks: the arena is not one)
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= weight_arena::kMinBlockBytes && weight_arena::in_load_scope()) {
      if (void* p = weight_arena::allocate(bytes)) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
    return UninitAllocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= weight_arena::kMinBlockBytes && weight_arena::release(p, bytes)) return;
    UninitAllocator<T>::deallocate(p, n);
  }
#endif
};

}  // namespace etnp
