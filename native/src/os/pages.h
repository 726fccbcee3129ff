// Whole pages straight from the OS, for large buffers that are written in full right away
// (FloatBuffer's packed weights and activations): Linux maps them with their pages populated in
// one call (far cheaper than a page fault per 4 KiB), other POSIX systems map them plainly,
// Windows commits them with VirtualAlloc. Page-aligned, so at least 64-byte aligned.
#pragma once
#include <cstddef>

namespace etnp::os {

// BYTES of zeroed, page-aligned memory, or nullptr when the OS refuses.
void* map_pages(std::size_t bytes) noexcept;
// Returns memory from map_pages(BYTES).
void unmap_pages(void* p, std::size_t bytes) noexcept;
// How many bytes of [p, p + bytes) are resident in memory (whole pages; 0 where the OS cannot say).
std::size_t resident_bytes(const void* p, std::size_t bytes) noexcept;

}  // namespace etnp::os
