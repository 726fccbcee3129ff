// The XNNPACK delegate's section of a weight cache file (runtime/weight_cache.h): the packed
// state of its nodes at the end of method-load packing, by each node's index in the graph as read
// (Node::origin), restored on a later load before fuse_nodes instead of packing, with every
// packed array a view into the read-only mapping. Restoring gives nodes the state packing leaves
// them in just before fuse_nodes, except that (1) placeholders that pack_deferred filled on the
// load that wrote the section come filled, and (2) what the post-fusion pass dropped (the static
// int8 convolutions' unused float packing, a fused pointwise node's int8 filter) comes dropped, as
// shape-only placeholders where fusion reads the shapes; fuse_nodes and that pass then end in the
// same state as on the writing load.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "delegates/xnnpack/xnn_graph.h"
#include "runtime/weight_cache.h"

namespace etnp::xnn {

// A delegate's key: its blob (graph, named-data keys and sizes, any constants it holds) and the
// named data whose keys do not name their content (hashed), and what else shapes the packed
// state (ETNP_XNN_FUSION, ETNP_WINOGRAD). Named data keyed by its SHA-256 (what ExecuTorch writes) is not read:
// a cache hit then reads nothing of the weights' bytes.
uint64_t weight_cache_key(Span blob, const std::vector<Span>& unkeyed);

// Per node origin, the (K, N) of the float packings the post-fusion pass dropped (written as
// shape-only placeholders, as packing made them before fuse_nodes).
using DroppedShapes = std::vector<std::vector<std::pair<int64_t, int64_t>>>;

// Writes the packed state of g's nodes (and their pre / post).
void write_packed_state(SectionWriter& w, const Graph& g, const DroppedShapes& dropped);

// Restores what write_packed_state wrote into g.nodes (their origins their indices: before
// fuse_nodes), as views of [p, p + n). False, changing nothing, when the section does not fit the
// graph (bounds, sizes, dimensions).
bool read_packed_state(const uint8_t* p, size_t n, Graph& g);

}  // namespace etnp::xnn
