#include "os/pages.h"

#ifdef _WIN32
#include "os/win32_api.h"
#else
#include <sys/mman.h>
#endif

namespace etnp::os {

#ifdef _WIN32
void* map_pages(std::size_t bytes) noexcept {
  return VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
}
void unmap_pages(void* p, std::size_t) noexcept {
  if (p) VirtualFree(p, 0, MEM_RELEASE);
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
void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (p) munmap(p, bytes);
}
#endif

}  // namespace etnp::os
