#include "util/weight_arena.h"

#include <cstdint>
#include <mutex>
#include <vector>

#include "os/pages.h"

namespace etnp::weight_arena {
namespace {

constexpr std::size_t kAlign = 64;
// a block's bytes in the arena: whole 64-byte lines
std::size_t rounded(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Chunk {
  uint8_t* base = nullptr;
  std::size_t bytes = 0;  // mapped
  std::size_t used = 0;   // handed out from the start (a chunk's own block: all of it)
  std::size_t live = 0;   // blocks not yet released
};

struct Arena {
  std::mutex mu;
  std::vector<Chunk> chunks;  // (few: a process's packed weights / 32 MiB)
  std::ptrdiff_t open = -1;   // the chunk new blocks are cut from
  std::size_t live_bytes = 0;
};

thread_local int t_load_depth = 0;

Arena& arena() {
  static Arena* a = new Arena;  // (never destroyed: blocks may be released during static destruction)
  return *a;
}

}  // namespace

LoadScope::LoadScope() noexcept { t_load_depth++; }
LoadScope::~LoadScope() { t_load_depth--; }
bool in_load_scope() noexcept { return t_load_depth > 0; }

void* allocate(std::size_t bytes) noexcept {
  if (bytes == 0) return nullptr;
  const std::size_t need = rounded(bytes);
  if (need < bytes) return nullptr;  // (overflow)
  Arena& A = arena();
  uint8_t* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(A.mu);
    if (need > kChunkBytes / 2) {  // a mapping of its own
      void* m = os::map_huge_zero_pages(need);
      if (!m) return nullptr;
      A.chunks.push_back(Chunk{(uint8_t*)m, need, need, 1});
      p = (uint8_t*)m;
    } else {
      if (A.open < 0 || A.chunks[(size_t)A.open].bytes - A.chunks[(size_t)A.open].used < need) {
        void* m = os::map_huge_zero_pages(kChunkBytes);
        if (!m) return nullptr;
        A.chunks.push_back(Chunk{(uint8_t*)m, kChunkBytes, 0, 0});
        A.open = (std::ptrdiff_t)A.chunks.size() - 1;
      }
      Chunk& c = A.chunks[(size_t)A.open];
      p = c.base + c.used;
      c.used += need;
      c.live++;
    }
    A.live_bytes += need;
  }
  os::populate_pages(p, bytes);  // (outside the lock: the faults are this block's own pages)
  return p;
}

bool release(void* ptr, std::size_t bytes) noexcept {
  if (!ptr) return false;
  const std::size_t need = rounded(bytes);
  Arena& A = arena();
  Chunk gone;
  {
    std::lock_guard<std::mutex> lock(A.mu);
    uint8_t* p = (uint8_t*)ptr;
    size_t i = 0;
    while (i < A.chunks.size() && (p < A.chunks[i].base || p >= A.chunks[i].base + A.chunks[i].bytes)) i++;
    if (i == A.chunks.size()) return false;
    Chunk& c = A.chunks[i];
    A.live_bytes -= need;
    if (--c.live == 0) {  // the chunk's last block: the chunk goes back to the OS
      gone = c;
      A.chunks.erase(A.chunks.begin() + (std::ptrdiff_t)i);
      if (A.open == (std::ptrdiff_t)i) A.open = -1;
      else if (A.open > (std::ptrdiff_t)i) A.open--;
    } else if (p + need == c.base + c.used) {
      c.used -= need;  // (the last block cut: its space is cut again)
    } else {
      os::release_pages(p, need);  // (a hole: its whole pages stop being resident)
    }
  }
  if (gone.base) os::unmap_pages(gone.base, gone.bytes);
  return true;
}

Usage usage() noexcept {
  Arena& A = arena();
  std::lock_guard<std::mutex> lock(A.mu);
  Usage u;
  for (const Chunk& c : A.chunks) u.mapped += c.bytes;
  u.live = A.live_bytes;
  u.chunks = A.chunks.size();
  return u;
}

}  // namespace etnp::weight_arena
