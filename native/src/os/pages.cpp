#include "os/pages.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/compiler.h"

#ifdef _WIN32
#include "os/win32_api.h"
#else
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__) && !defined(ETNP_SANITIZED)
#include <malloc.h>
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
void* map_huge_zero_pages(std::size_t bytes) noexcept { return map_zero_pages(bytes); }
void populate_pages(void*, std::size_t) noexcept {}  // (committed pages come on first touch)
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

#if defined(__linux__) && defined(MADV_HUGEPAGE)
namespace {

constexpr std::size_t kHuge = std::size_t(2) << 20;  // (a PMD huge page: x86-64, aarch64 with 4 KiB pages)

bool read_text(const char* path, char* buf, std::size_t n) {
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  const std::size_t got = std::fread(buf, 1, n - 1, f);
  std::fclose(f);
  buf[got] = 0;
  return got > 0;
}

// Whether transparent huge pages may back a MADV_HUGEPAGE region: THP on ("always" or "madvise"),
// PMD pages of kHuge bytes, base pages of 4 KiB, and not turned off by ETNP_HUGE_PAGES=0.
bool thp_usable() {
  static const bool ok = [] {
    const char* env = std::getenv("ETNP_HUGE_PAGES");
    if (env && env[0] == '0') return false;
    char buf[256];
    if (page_size() != 4096) return false;
    if (!read_text("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) || std::strstr(buf, "[never]"))
      return false;
    if (read_text("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", buf, sizeof buf) &&
        std::strtoull(buf, nullptr, 10) != kHuge)
      return false;
    return true;
  }();
  return ok;
}

// Bytes of free memory in whole huge pages (free blocks of order 9 and up, /proc/buddyinfo; the
// DMA zone left out): what huge-page faults take without compacting memory.
std::size_t free_huge_bytes() {
  char buf[4096];
  if (!read_text("/proc/buddyinfo", buf, sizeof buf)) return 0;
  std::size_t total = 0;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    const char* z = std::strstr(line, "zone");
    if (z) {
      const char* q = z + 4;
      q += std::strspn(q, " ");
      const std::size_t name = std::strcspn(q, " ");
      const bool dma = name == 3 && std::strncmp(q, "DMA", 3) == 0;
      q += name;
      char* e = nullptr;
      for (int order = 0; !dma && order <= 20; order++) {
        const unsigned long long n = std::strtoull(q, &e, 10);
        if (e == q) break;
        if (order >= 9) total += (std::size_t)n << (order + 12);
        q = e;
      }
    }
    line = next;
  }
  return total;
}

// BYTES in a mapping that starts on a huge page and asks for huge pages, or nullptr where
// huge pages are not to be had right away (or the OS refuses the mapping)
void* map_huge(std::size_t bytes) noexcept {
  // (a huge page's worth at least, and twice the bytes free in whole huge pages)
  if (bytes < kHuge || !thp_usable() || free_huge_bytes() < 2 * bytes) return nullptr;
  const std::size_t page = page_size(), span = (bytes + page - 1) / page * page;
  void* q = mmap(nullptr, span + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) return nullptr;
  const std::uintptr_t b = (std::uintptr_t)q, a = (b + kHuge - 1) & ~(std::uintptr_t)(kHuge - 1);
  if (a > b) munmap(q, a - b);  // (the mapping trimmed to [a, a + span): unmap_pages' range)
  munmap((void*)(a + span), b + kHuge - a);
  madvise((void*)a, span, MADV_HUGEPAGE);  // (refused: plain pages)
  return (void*)a;
}

}  // namespace

void* map_huge_zero_pages(std::size_t bytes) noexcept {
  void* p = map_huge(bytes);
  return p ? p : map_zero_pages(bytes);
}

#else
void* map_huge_zero_pages(std::size_t bytes) noexcept { return map_zero_pages(bytes); }
#endif

void populate_pages(void* p, std::size_t bytes) noexcept {
  if (!p || !bytes) return;
  const std::size_t page = page_size();
#if defined(MADV_POPULATE_WRITE)
  const std::uintptr_t a = (std::uintptr_t)p & ~(std::uintptr_t)(page - 1);
  const std::uintptr_t e = ((std::uintptr_t)p + bytes + page - 1) & ~(std::uintptr_t)(page - 1);
  if (madvise((void*)a, e - a, MADV_POPULATE_WRITE) == 0) return;
#endif
  // (a kernel before 5.14: a write a page, each of a byte of [p, p + bytes) as it is)
  const std::uintptr_t end = (std::uintptr_t)p + bytes;
  for (std::uintptr_t q = (std::uintptr_t)p; q < end; q = (q & ~(std::uintptr_t)(page - 1)) + page) {
    volatile uint8_t* v = (volatile uint8_t*)q;
    *v = *v;
  }
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

void trim_heap() noexcept {
#if defined(__GLIBC__) && !defined(ETNP_SANITIZED)
  malloc_trim(0);
#endif
}

}  // namespace etnp::os
