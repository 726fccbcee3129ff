// Chains of portable ops that one kernel does at once (kernels/ops/fused_chains.h: RMSNorm, SwiGLU,
// RoPE on interleaved pairs - what an LLM export leaves between its delegates, ~35 instructions a
// decoder layer), found in a method's instructions at load (Method::fuse_chains, fused_calls.cpp).
// The chain runs at its last instruction, or where the memory plan does not allow that, at its
// first (which carries the fused call; the chain's other instructions are skipped): the kernel
// writes only the chain's result. Where it declines the tensors at hand, the chain's own
// instructions run there, in order. Taken only where that is safe whatever the call's shapes
// (fused_calls.cpp: ChainFinder::safe). Off while a profiled call captures intermediate outputs
// (each instruction then runs) and with ETNP_FUSE_CHAINS=0.
// A copy that moves no byte is such a call too (runtime/copy_elision.cpp): of its one
// instruction, whose kernel makes the result view the input's bytes - or of two, the input's
// kernel run at the copy first, writing where the result is planned.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/ops/fused_chains.h"

namespace etnp {

struct FusedCall {
  FusedFn fn = nullptr;
  const char* name = "";          // in profiles: "etnp::fused_rms_norm" ...
  std::vector<EValue*> args;      // the kernel's (fused_chains.h)
  std::vector<uint32_t> members;  // the chain's instructions, in order (run where fn declines)
  // an elided copy's result and the static views of it the program plans (else none): their
  // planned bytes, given back to them before each run (the kernel then views the input's, or
  // declines and the copy writes them)
  struct Planned {
    EValue* v;
    void* data;
    size_t capacity;
  };
  std::vector<Planned> replanned;
  // an elided copy whose input's kernel runs at it, writing where the copy's result is planned
  // (the kernel's instruction; -1: none): args[0] is that input, args[2] the result
  int64_t sunk = -1;
};

struct Instruction;
// Whether x writes into an argument other than its out tensor (a state, a cache).
bool writes_in_place(const Instruction& x);

// A value's bytes [lo, hi) as the analyses at load see them (its planned memory).
struct ByteRange {
  const uint8_t *lo = nullptr, *hi = nullptr;
  bool overlaps(const ByteRange& o) const { return lo < o.hi && o.lo < hi; }
};

}  // namespace etnp
