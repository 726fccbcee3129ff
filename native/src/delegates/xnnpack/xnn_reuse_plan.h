// Buffer reuse between a delegate's internal values whose lifetimes do not overlap, as a memory
// planner would: before node i runs, its output takes over the buffer of a value no later node
// reads, so a call touches a few cache-warm buffers instead of one buffer per value. The
// takeovers are buffer swaps (the dead value holds the taker's buffer), undone in reverse order
// after the call, so every call starts from the same assignment and touches the same buffers.
// Two kinds of buffer are planned, each among its own: float32 buffers (Value::data) and byte
// codes (Value::q8) of values kept as codes alone (Value::as_codes) or dynamically quantized.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "delegates/xnnpack/xnn_graph.h"

namespace etnp::xnn {

struct Reuse {
  uint32_t taker, giver;
};

struct ReusePlan {
  std::vector<Reuse> swaps;  // in the order they are made during a call
  std::vector<size_t> end;   // swaps[0, end[i]) are made before node i runs
};

// CHAIN_END[i]: the last node of the chain node i runs in (a value read or written inside a
// chain, run chunk by chunk, lives to the chain's end). CODES: plan the code buffers, else the
// float32 buffers of the values not kept as codes alone.
ReusePlan plan_reuse(const Graph& g, const std::vector<int64_t>& chain_end, bool codes);

}  // namespace etnp::xnn
