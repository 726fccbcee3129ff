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

// Runs nodes [first, first + count) chunk by chunk, each finished as run_node would (clamped,
// snapped or rounded to its datatype). False, having done nothing but shape outputs, when an
// input's shape is not the chain's: the caller then runs the nodes one by one.
bool run_chain(KernelContext& ctx, Graph& g, size_t first, size_t count);

}  // namespace etnp::xnn
