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
// Gives the whole pages inside [p, p + bytes) back to the OS: their contents are gone (a private
// anonymous page reads as zeros next time, a private file mapping's as the file's bytes). Returns
// the bytes given back (0 where the OS has no such call: the memory then stays as it is).
std::size_t release_pages(const void* p, std::size_t bytes) noexcept;
// The OS page size.
std::size_t page_size() noexcept;

}  // namespace etnp::os
