#include "os/pages.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#ifdef _WIN32
#include "os/win32_api.h"
#else
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace etnp::os {

#ifdef _WIN32
void* map_pages(std::size_t bytes) noexcept {
  return VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
}
void* map_zero_pages(std::size_t bytes) noexcept {  // (committed pages are given on first touch)
  return VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
}
void unmap_pages(void* p, std::size_t) noexcept {
  if (p) VirtualFree(p, 0, MEM_RELEASE);
}
std::size_t release_pages(const void*, std::size_t) noexcept { return 0; }
std::size_t page_size() noexcept {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwPageSize ? (std::size_t)si.dwPageSize : 4096;
}
#else
void* map_pages(std::size_t bytes) noexcept {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;
#endif
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
void* map_zero_pages(std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (p) munmap(p, bytes);
}
std::size_t page_size() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (std::size_t)p : 4096;
}
std::size_t release_pages(const void* p, std::size_t bytes) noexcept {
  const std::size_t page = page_size();
  const std::uintptr_t a = ((std::uintptr_t)p + page - 1) & ~(std::uintptr_t)(page - 1);
  const std::uintptr_t b = ((std::uintptr_t)p + bytes) & ~(std::uintptr_t)(page - 1);
  if (!p || b <= a) return 0;
  return madvise((void*)a, b - a, MADV_DONTNEED) == 0 ? (std::size_t)(b - a) : 0;
}
#endif

// (the same everywhere: release_pages is the OS's part)
void zero_pages(void* p, std::size_t bytes) noexcept {
  if (!p || !bytes) return;
  const std::size_t page = page_size();
  uint8_t* const b = (uint8_t*)p;
  uint8_t* const e = b + bytes;
  uint8_t* const pb = (uint8_t*)(((std::uintptr_t)b + page - 1) & ~(std::uintptr_t)(page - 1));
  uint8_t* const pe = (uint8_t*)((std::uintptr_t)e & ~(std::uintptr_t)(page - 1));
  if (pb < pe && release_pages(pb, (std::size_t)(pe - pb)) == (std::size_t)(pe - pb)) {
    std::memset(b, 0, (std::size_t)(pb - b));
    std::memset(pe, 0, (std::size_t)(e - pe));
  } else {
    std::memset(b, 0, bytes);
  }
}

void copy_changed_pages(void* dst, const void* src, std::size_t bytes) noexcept {
  const std::size_t page = page_size();
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  const uint8_t* const end = d + bytes;
  while (d < end) {
    const uint8_t* next = (const uint8_t*)(((std::uintptr_t)d + page) & ~(std::uintptr_t)(page - 1));
    const std::size_t n = (std::size_t)(std::min(next, end) - d);
    if (std::memcmp(d, s, n) != 0) std::memcpy(d, s, n);
    d += n;
    s += n;
  }
}

}  // namespace etnp::os
