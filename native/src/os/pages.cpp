#include "os/pages.h"

#ifdef _WIN32
#include "os/win32_api.h"
#else
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>
#endif

namespace etnp::os {

#ifdef _WIN32
void* map_pages(std::size_t bytes) noexcept {
  return VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
}
void unmap_pages(void* p, std::size_t) noexcept {
  if (p) VirtualFree(p, 0, MEM_RELEASE);
}
std::size_t resident_bytes(const void*, std::size_t) noexcept { return 0; }
#else
void* map_pages(std::size_t bytes) noexcept {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;
#endif
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (p) munmap(p, bytes);
}
std::size_t resident_bytes(const void* p, std::size_t bytes) noexcept {
  const std::size_t page = (std::size_t)sysconf(_SC_PAGESIZE);
  if (!p || !bytes || page == 0) return 0;
  const std::uintptr_t a = (std::uintptr_t)p & ~(std::uintptr_t)(page - 1);
  const std::size_t pages = ((std::uintptr_t)p + bytes - a + page - 1) / page;
  std::vector<unsigned char> v(pages);
#ifdef __APPLE__
  char* vec = reinterpret_cast<char*>(v.data());  // (macOS declares char *)
#else
  unsigned char* vec = v.data();
#endif
  if (mincore((void*)a, pages * page, vec) != 0) return 0;
  std::size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n * page;
}
#endif

}  // namespace etnp::os
