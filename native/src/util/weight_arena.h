// The weight arena: where packed weights read from memory once a call live, blocks of 64 KiB and
// more (WeightAllocator, float_buffer.h: the 4-bit weights of an LLM, which a decode step streams
// layer after layer). As heap blocks on 4 KiB pages, the stream crosses a page every 4 KiB - a TLB
// miss, and the hardware prefetcher stops there. The arena places them one after another in chunks
// backed by huge pages where the OS gives them without compacting memory
// (os::map_huge_zero_pages): SmolLM-135M 8da4w's 211 decode GEMVs (qb4_gemv_bench) read their
// 76.5 MB in 3.2-3.3 ms instead of 3.9-4.1 on one core here (docs/performance.md, thirteenth
// session). Weights that a GEMM reuses across many rows gain nothing from it, and a huge page
// can cost more to get than 512 small ones (a VM whose host takes back free memory: the first
// touch of such a page faults in the host), so only the streamed kinds come here.
//
// Only what a delegate packs while it loads comes here (a LoadScope on the loading thread): weights
// packed per call (a GEMM whose weights are computed at run time) stay heap blocks, so the arena
// never churns. Chunks of kChunkBytes, cut from the start; a block larger than half a chunk gets a
// mapping of its own. A block's pages are populated in one call as it is handed out. A released
// block at the end of its chunk's used part is handed out again; one inside it (a temporary of
// the load) gives its whole pages back to the OS; a chunk whose last block is released (its
// program unloaded) goes back to the OS. Thread-safe (programs load on several threads).
#pragma once
#include <cstddef>

namespace etnp::weight_arena {

// Blocks below this stay heap blocks (WeightAllocator).
constexpr std::size_t kMinBlockBytes = std::size_t(64) << 10;
constexpr std::size_t kChunkBytes = std::size_t(32) << 20;

// While one is alive on a thread, WeightAllocator's large blocks on that thread come from the arena.
class LoadScope {
 public:
  LoadScope() noexcept;
  ~LoadScope();
  LoadScope(const LoadScope&) = delete;
  LoadScope& operator=(const LoadScope&) = delete;
};
bool in_load_scope() noexcept;

// BYTES (> 0) of uninitialised memory, 64-byte aligned and resident, or nullptr when the OS refuses.
void* allocate(std::size_t bytes) noexcept;
// Gives back P, a block from allocate(BYTES), and returns true; false (nothing done) when P is
// not the arena's.
bool release(void* p, std::size_t bytes) noexcept;

// Mapped bytes (chunks and own mappings) and bytes handed out and not yet released, for tests.
struct Usage {
  std::size_t mapped = 0, live = 0, chunks = 0;
};
Usage usage() noexcept;

}  // namespace etnp::weight_arena
