// Elementwise chains, run chunk by chunk (xnn_chain.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "delegates/xnnpack/xnn_graph.h"
#include "delegates/xnnpack/xnn_node_util.h"
#include "kernels/compute/gemm.h"
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

// A chain prepared for one call: run(b, e) computes every node of it over elements [b, e) (on
// the calling thread, chunk by chunk), each finished as run_node would (clamped, snapped or
// rounded to its datatype); the ranges must cover [0, total()) once, in any order and on any
// threads. prepare: false, having done nothing but shape outputs, when an input's shape is not the
// chain's (the caller then runs the nodes one by one, every output written whole). local:
// plan_chain_locals' flags of these nodes (null: none).
class ChainRun {
 public:
  static constexpr int64_t kChunk = 4096;  // elements: a chunk of every value in the chain stays in L1/L2
  bool prepare(Graph& g, size_t first, size_t count, const uint8_t* local);
  void run(int64_t begin, int64_t end) const;
  int64_t total() const { return total_; }

 private:
  struct Step {
    Node* n;
    const UnaryOp* u;
    const BinaryOp* b;
    const float* x[2];
    float* y;
    const Value* o;
    bool table;
    Int8Grid ga;
    float t[257];
    bool finished;  // by the table (its entries snapped onto the output's grid)
    bool copies;    // Clamp / Copy / Convert: the input clamped, then finished (snapped, rounded)
    bool alias;     // a local copy that changes nothing: later steps read its input instead
    int slot;       // >= 0: a local output, chunk `slot` of the thread's buffer
    int from[2];    // per input: the slot of the local output it is, or -1 (then x[i])
    // a SiLU: this Sigmoid's output is read only by the next step, a Multiply of it and the
    // Sigmoid's input, which computes both in one pass (vec_silu: the same bits) - `skip` on the
    // Sigmoid, `silu` on the Multiply (its x[0] / from[0] then the Sigmoid's input)
    bool skip, silu;
  };
  // Where every step reads only the chain's first input (a value on an int8 grid: 256 values and
  // NaN) or earlier steps' outputs, and only the last step's output leaves the chain, the chain
  // is a function of that input's grid point: its steps run once over the 257 points at prepare
  // (the same functions, so the same results) into whole_table_, and run() is one lookup - where
  // a step is a costly function or a lookup already (a static-int8 SiLU: Convert, Sigmoid,
  // Multiply, Convert; EfficientNet-B0 int8 3.85 -> 3.27 ms), not where all are cheap (a
  // hardswish's few vector instructions beat a gather).
  void join_silus();
  bool whole_table(const Graph& g);
  void step(const Step& s, const float* x0, const float* x1, float* y, int64_t len) const;
  std::vector<Step> steps_;
  int slots_ = 0;
  int64_t total_ = 0;
  bool whole_ = false;
  Int8Grid whole_grid_;
  float whole_table_[257];
};

// A chain handed to the node producing its input (Node::then): the producer, once it has shaped
// its output, calls prepare(); if true, it must then call run.run(b, e) over every element of
// its output exactly once, each range after the producer's values there are final, and set done.
// A producer that does not (another path, other datatypes) leaves done false, and the executor
// runs the chain afterwards as usual.
struct ChainHook {
  Graph* g;
  size_t first, count;
  const uint8_t* local;
  ChainRun run;
  bool done = false;
  int64_t row_len = 0;  // (chain_on_rows)
  bool prepare() { return run.prepare(*g, first, count, local); }
};

// The chain handed to n (Node::then), prepared, when there is one and the path about to compute
// n's output can run it on rows it has finished (`can`); the path must then cover every element
// with run.run. Null otherwise (the executor runs the chain after the node).
inline ChainHook* take_chain(Node& n, bool can) {
  if (!can || !n.then || !n.then->prepare()) return nullptr;
  n.then->done = true;
  return n.then;
}

// The chain h (from take_chain) handed to a GEMM writing the node's output as whole rows of
// row_len elements (ldc == row_len): it runs on each block of rows as the GEMM finishes them
// (GemmEpilogue::rows_done), while they are in cache.
inline void chain_on_rows(GemmEpilogue& ep, ChainHook* h, int64_t row_len) {
  h->row_len = row_len;
  ep.rows_ctx = h;
  ep.rows_done = [](void* c, int64_t m0, int64_t m1) {
    const ChainHook* hook = static_cast<const ChainHook*>(c);
    hook->run.run(m0 * hook->row_len, m1 * hook->row_len);
  };
}

// Per node: the length of the chain to hand it as Node::then (0: none): a Conv2d,
// DepthwiseConv2d (not a band pipeline) or FullyConnected with a float32 output (or one on a per-tensor int8 grid),
// followed right away by a chain (or one chainable node) whose first node reads that output.
std::vector<uint32_t> plan_producer_chains(const Graph& g, const std::vector<uint32_t>& chains);

// Runs nodes [first, first + count) as a ChainRun, chunks across threads; false as prepare.
bool run_chain(KernelContext& ctx, Graph& g, size_t first, size_t count, const uint8_t* local);

}  // namespace etnp::xnn
