// Whole pages straight from the OS. map_pages: for large buffers that are written in full right
// away (FloatBuffer's packed weights and activations): Linux maps them with their pages populated
// in one call (far cheaper than a page fault per 4 KiB), other POSIX systems map them plainly,
// Windows commits them with VirtualAlloc. map_zero_pages: for large buffers perhaps written only
// in part (a method's planned memory: a KV cache's unused positions), whose pages the OS provides
// when first written - a page never written stays non-resident. Page-aligned, so at least 64-byte
// aligned.
#pragma once
#include <cstddef>

namespace etnp::os {

// BYTES of zeroed, page-aligned memory, or nullptr when the OS refuses.
void* map_pages(std::size_t bytes) noexcept;
// BYTES of zeroed, page-aligned memory whose pages become resident when first written (reads of
// an unwritten page see zeros), or nullptr when the OS refuses.
void* map_zero_pages(std::size_t bytes) noexcept;
// BYTES of zeroed memory like map_zero_pages, backed by the OS's huge pages (2 MiB transparent
// huge pages on Linux) where it can give them right away: the buffer then starts on a huge page,
// and its pages become resident, a huge page at a time, when first written (or populated).
// Huge pages are asked for only where free memory already holds enough whole huge pages
// (/proc/buddyinfo), so a fault never waits for the kernel to compact memory, and not at all with
// ETNP_HUGE_PAGES=0 or where the OS has none: then it is map_zero_pages. Wanted for data read in
// long streams (packed weights: one TLB entry and one hardware-prefetch stream per 2 MiB instead
// of per 4 KiB). Returned by unmap_pages(p, BYTES).
void* map_huge_zero_pages(std::size_t bytes) noexcept;
// Makes [p, p + bytes) of map_zero_pages / map_huge_zero_pages memory resident now, in one call
// where the OS has one (far cheaper than a page fault per page); a no-op elsewhere.
void populate_pages(void* p, std::size_t bytes) noexcept;
// Returns memory from map_pages(BYTES), map_zero_pages(BYTES) or map_huge_zero_pages(BYTES).
void unmap_pages(void* p, std::size_t bytes) noexcept;
// Gives the whole pages inside [p, p + bytes) back to the OS: their contents are gone (a private
// anonymous page reads as zeros next time, a private file mapping's as the file's bytes). Returns
// the bytes given back (0 where the OS has no such call: the memory then stays as it is).
std::size_t release_pages(const void* p, std::size_t bytes) noexcept;
// Zeroes [p, p + bytes) of memory from map_zero_pages: its whole pages are given back (zeros,
// non-resident until written again), the partial pages at either end written; where the OS cannot
// give pages back, every byte is written.
void zero_pages(void* p, std::size_t bytes) noexcept;
// Copies BYTES from SRC to DST, writing only the pages' worth of DST (page-sized runs, aligned on
// DST's pages) whose bytes differ: memory from map_zero_pages keeps the unwritten pages of DST
// that SRC leaves zero (an all-zero initial KV cache) non-resident.
void copy_changed_pages(void* dst, const void* src, std::size_t bytes) noexcept;
// The OS page size.
std::size_t page_size() noexcept;
// Gives the C library's free heap memory back to the OS: glibc keeps the free chunks that a
// method load's temporaries (filters decoded for packing, the packers' scratch) leave between the
// blocks that stay, resident until reused (MobileBERT: 4 MB). malloc_trim there; nothing elsewhere
// (other C libraries return such memory themselves or offer no call).
void trim_heap() noexcept;

}  // namespace etnp::os
