// Elementwise chains, run chunk by chunk (xnn_chain.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "delegates/xnnpack/xnn_graph.h"
#include "kernels/kernel_util.h"

namespace etnp::xnn {

// Per node: the length of the chain starting there (>= 2), 0 for the other nodes of a chain, 1
// for a node in none. A chain: consecutive elementwise nodes (unary, or binary of same-shape
// inputs), each after the first reading a value an earlier one wrote.
std::vector<uint32_t> plan_chains(const Graph& g);

// Per node: 1 where the node is in a chain and its output is read only by later nodes of that
// chain (not a graph output, not by a fused part): the chain passes it along chunk by chunk in a
// small per-thread buffer and never writes it whole (SiLU's sigmoid, a static-int8 chain's
// dequantized copies).
std::vector<uint8_t> plan_chain_locals(const Graph& g, const std::vector<uint32_t>& chains);

// Runs nodes [first, first + count) chunk by chunk, each finished as run_node would (clamped,
// snapped or rounded to its datatype). local: plan_chain_locals' flags of these nodes (null: none).
// False, having done nothing but shape outputs, when an input's shape is not the chain's: the
// caller then runs the nodes one by one (every output written whole).
bool run_chain(KernelContext& ctx, Graph& g, size_t first, size_t count, const uint8_t* local);

}  // namespace etnp::xnn
