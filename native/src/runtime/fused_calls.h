// Chains of portable ops that one kernel does at once (kernels/ops/fused_chains.h: RMSNorm, SwiGLU,
// RoPE on interleaved pairs - what an LLM export leaves between its delegates, ~35 instructions a
// decoder layer), found in a method's instructions at load (Method::fuse_chains, fused_calls.cpp).
// The chain's last instruction carries the fused call, its other instructions are skipped; the
// fused kernel writes only the chain's result, where and when the last instruction would. Where
// its kernel declines the tensors at hand, the chain's own instructions run there, in order.
// Taken only where that is safe whatever the call's shapes: every value between the chain's
// instructions is read by the chain alone, and no instruction between its first and last touches
// the memory of its inputs (a later value planned onto an input after its last read) nor of its
// intermediate values. Off while a profiled call captures intermediate outputs (each instruction
// then runs) and with ETNP_FUSE_CHAINS=0.
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
};

}  // namespace etnp
