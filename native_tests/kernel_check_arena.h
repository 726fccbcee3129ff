// Kernel check (included by kernel_check.cpp): the weight arena (util/weight_arena.h) and
// WeightAllocator (util/float_buffer.h). Blocks are cut one after another from a chunk (64-byte
// aligned, disjoint, writable), a block over half a chunk gets a mapping of its own, releasing
// the last-cut block lets the next one take its place, a hole keeps the chunk, the chunk goes back
// to the OS with its last block (usage() back to where it started), a pointer that is not the
// arena's is refused; WeightAllocator takes the arena only inside a LoadScope and only for blocks
// of kMinBlockBytes and more (in a sanitizer build, never), and frees each block where it came from.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/float_buffer.h"
#include "util/weight_arena.h"

static int check_weight_arena() {
  using namespace etnp;
  namespace wa = etnp::weight_arena;
  int bad = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok && bad++ < 5) std::printf("weight_arena: %s\n", what);
  };
  const wa::Usage start = wa::usage();
  const size_t kB = wa::kMinBlockBytes;
  uint8_t* a = (uint8_t*)wa::allocate(kB + 1);
  uint8_t* b = (uint8_t*)wa::allocate(3 * kB);
  uint8_t* c = (uint8_t*)wa::allocate(kB);
  expect(a && b && c, "allocate refused");
  if (!a || !b || !c) return bad;
  expect(((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 64 == 0, "a block is not 64-byte aligned");
  expect(b >= a + kB + 1 && c >= b + 3 * kB, "blocks overlap or are out of order");
  std::memset(a, 1, kB + 1), std::memset(b, 2, 3 * kB), std::memset(c, 3, kB);
  expect(a[kB] == 1 && b[0] == 2 && b[3 * kB - 1] == 2 && c[0] == 3, "a block does not keep its bytes");
  wa::Usage u = wa::usage();
  expect(u.live == start.live + (kB + 64) + 3 * kB + kB, "live bytes");
  // the last-cut block released: the next block takes its place
  expect(wa::release(c, kB), "release of an arena block refused");
  uint8_t* d = (uint8_t*)wa::allocate(kB / 2);
  expect(d == c, "the space of the last-cut block is not cut again");
  // a hole (b) keeps the chunk and its neighbours' bytes
  expect(wa::release(b, 3 * kB), "release of a hole refused");
  expect(a[kB] == 1 && a[0] == 1, "a hole's release touched its neighbour");
  std::memset(d, 4, kB / 2);
  expect(d[kB / 2 - 1] == 4, "a block after a hole is not writable");
  // a block of its own
  const size_t big = wa::kChunkBytes / 2 + 4096 + 7;
  uint8_t* e = (uint8_t*)wa::allocate(big);
  expect(e != nullptr, "allocate of a large block refused");
  if (e) {
    e[0] = 5, e[big - 1] = 6;
    expect(wa::usage().chunks >= start.chunks + 1, "a large block has no mapping of its own");
    expect(wa::release(e, big), "release of a large block refused");
  }
  int local = 0;
  expect(!wa::release(&local, kB), "a pointer that is not the arena's was taken");
  expect(wa::release(a, kB + 1) && wa::release(d, kB / 2), "release refused");
  u = wa::usage();
  expect(u.live == start.live && u.chunks == start.chunks && u.mapped == start.mapped,
         "the arena does not go back to where it started");
  // WeightAllocator: the arena inside a LoadScope for large blocks only
  {
    std::vector<float, WeightAllocator<float>> outside(kB);
    outside[kB - 1] = 1.f;
    expect(wa::usage().live == start.live, "a block outside a LoadScope came from the arena");
    wa::LoadScope scope;
    std::vector<uint8_t, WeightAllocator<uint8_t>> small(kB - 1), large(kB);
    large[kB - 1] = 9;
#if defined(ETNP_SANITIZED)
    expect(wa::usage().live == start.live, "a sanitizer build put a block in the arena");
#else
    expect(wa::usage().live == start.live + kB, "a large block inside a LoadScope is not the arena's");
#endif
    large.resize(3 * kB);  // (reallocated: the old block released to the arena)
    expect(large[kB - 1] == 9, "resize lost the bytes");
  }
  u = wa::usage();
  expect(u.live == start.live && u.chunks == start.chunks, "WeightAllocator's blocks were not released");
  expect(!wa::in_load_scope(), "a LoadScope outlived its block");
  return bad;
}
