// Elementwise chains: consecutive unary/binary nodes where each reads what an earlier one wrote
// (a SiLU is Sigmoid then Multiply, a static-int8 one Convert, Sigmoid, Multiply, Convert) run
// chunk by chunk: every node over the first few thousand elements, then over the next, so the
// values passed along the chain are read back from cache instead of memory. A node's output that
// later nodes outside the chain read is written whole; one only the chain reads stays in a
// chunk-sized buffer. Clamps and grid snapping are done per chunk as run_node would do them.
#include "delegates/xnnpack/xnn_chain.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "delegates/xnnpack/xnn_node_util.h"
#include "kernels/compute/vec_math.h"
#include "kernels/kernel_util.h"
#include "os/thread_slot.h"

namespace etnp::xnn {
namespace {


// A node a chain can hold: an elementwise function of same-shape inputs (PReLU's slope broadcasts)
// whose output needs no whole-tensor step (dynamic quantization computes per-row parameters).
bool chainable(const Graph& g, const Node& n) {
  const size_t nv = g.values.size();
  const bool unary = unary_op(n.type) != nullptr, binary = binary_op(n.type) != nullptr && n.type != PReLU;
  if ((!unary && !binary) || n.inputs.size() != (unary ? 1u : 2u) || n.output >= nv || n.output2 != kInvalidId ||
      n.pre || n.post || n.residual != kInvalidId || n.nchw_transposed != kInvalidId)
    return false;
  for (uint32_t id : n.inputs)
    if (id >= nv || id == n.output) return false;
  // (an add of int8 values runs on its own, on their int8 codes where they are kept so; a multiply
  // of int8 values on its own too, requantized as XNNPACK does: MulRequant)
  return !dynamically_quantized(g.values[n.output]) && !int8_add(g, n) && !int8_mul(g, n);
}

}  // namespace

std::vector<uint32_t> plan_chains(const Graph& g) {
  const size_t nn = g.nodes.size();
  std::vector<uint32_t> len(nn, 1);
  if (fusion_mode() != FusionMode::On) return len;  // (ETNP_XNN_FUSION=off|steps: node by node)
  for (size_t i = 0; i < nn;) {
    size_t j = i + 1;
    if (chainable(g, g.nodes[i])) {
      std::vector<uint32_t> written{g.nodes[i].output};
      for (; j < nn && chainable(g, g.nodes[j]); j++) {
        const Node& n = g.nodes[j];
        const bool linked = std::any_of(n.inputs.begin(), n.inputs.end(), [&](uint32_t id) {
          return std::find(written.begin(), written.end(), id) != written.end();
        });
        const bool rewrites = std::find(written.begin(), written.end(), n.output) != written.end();
        if (!linked || rewrites) break;
        written.push_back(n.output);
      }
    }
    if (j - i > 1) {
      len[i] = (uint32_t)(j - i);
      for (size_t k = i + 1; k < j; k++) len[k] = 0;
    }
    i = j;
  }
  return len;
}

std::vector<uint32_t> plan_producer_chains(const Graph& g, const std::vector<uint32_t>& chains) {
  const size_t nn = g.nodes.size(), nv = g.values.size();
  std::vector<uint32_t> then(nn, 0);
  if (fusion_mode() != FusionMode::On) return then;
  for (size_t i = 0; i + 1 < nn; i++) {
    const Node& p = g.nodes[i];
    if ((p.type != Conv2d && p.type != DepthwiseConv2d && p.type != FullyConnected) || p.pre || p.post ||
        p.output >= nv)
      continue;
    const Value& o = g.values[p.output];
    if ((o.dtype != FP32 && !on_int8_grid(o)) || (o.quant != Quant::None && !on_int8_grid(o)) || dynamically_quantized(o))
      continue;
    const Node& c = g.nodes[i + 1];
    const uint32_t len = chains[i + 1] >= 2 ? chains[i + 1] : chains[i + 1] == 1 && chainable(g, c) ? 1 : 0;
    if (len && std::find(c.inputs.begin(), c.inputs.end(), p.output) != c.inputs.end()) then[i] = len;
  }
  return then;
}

std::vector<uint8_t> plan_chain_locals(const Graph& g, const std::vector<uint32_t>& chains) {
  const size_t nv = g.values.size(), nn = g.nodes.size();
  std::vector<uint8_t> local(nn, 0);
  std::vector<int> readers(nv, 0);
  auto count = [&](const Node& n) {
    for (uint32_t id : n.inputs)
      if (id < nv) readers[id]++;
  };
  for (const Node& n : g.nodes) {
    count(n);
    if (n.pre) count(*n.pre);
    if (n.post) count(*n.post);
  }
  for (uint32_t id : g.input_ids) readers[id] += 2;  // (never local)
  for (uint32_t id : g.output_ids) readers[id] += 2;
  for (size_t f = 0; f < nn; f++) {
    if (chains[f] < 2) continue;
    const size_t end = f + chains[f];
    for (size_t i = f; i + 1 < end; i++) {
      const uint32_t o = g.nodes[i].output;
      if (o >= nv || g.values[o].external_id != kInvalidId || g.values[o].is_constant) continue;
      int inside = 0;
      for (size_t j = i + 1; j < end; j++)
        for (uint32_t id : g.nodes[j].inputs) inside += id == o;
      local[i] = inside > 0 && inside == readers[o];
    }
  }
  return local;
}

bool ChainRun::prepare(Graph& g, size_t first, size_t count, const uint8_t* local) {
  steps_.clear();
  // every input of every node must have the chain's shape (the first node's first input's)
  const std::vector<int64_t> shape = g.values[g.nodes[first].inputs[0]].shape;
  for (size_t k = 0; k < count; k++) {  // shapes first (outputs become inputs of later nodes)
    Node& n = g.nodes[first + k];
    for (uint32_t id : n.inputs)
      if (g.values[id].shape != shape || (!g.values[id].is_constant && g.values[id].data.size() < (size_t)g.values[id].numel()))
        return false;
    ensure_shape(out(g, n), shape);
  }
  steps_.resize(count);
  slots_ = 0;
  for (size_t k = 0; k < count; k++) {
    Node& n = g.nodes[first + k];
    Step& s = steps_[k];
    Value& o = out(g, n);
    s.n = &n;
    s.u = unary_op(n.type);
    s.b = s.u ? nullptr : binary_op(n.type);
    s.copies = n.type == Clamp || n.type == Copy || n.type == Convert;
    const bool clamps = std::isfinite(n.out_min) || std::isfinite(n.out_max);
    const bool plain = o.dtype == FP32 && !on_int8_grid(o) && !dynamically_quantized(o);
    const bool is_local = local && local[k];
    s.alias = is_local && s.copies && !clamps && plain;
    s.slot = is_local && !s.alias ? slots_++ : -1;
    for (size_t i = 0; i < n.inputs.size(); i++) {
      s.from[i] = -1;
      s.x[i] = g.values[n.inputs[i]].cdata();
      for (size_t j = k; j-- > 0;) {  // the latest earlier step writing it
        const Step& w = steps_[j];
        if (w.n->output != n.inputs[i]) continue;
        if (w.alias) s.from[i] = w.from[0], s.x[i] = w.x[0];
        else if (w.slot >= 0) s.from[i] = w.slot;
        break;
      }
    }
    s.y = o.data.data();
    s.o = &o;
    n.snapped = false;
    s.skip = s.silu = false;
    s.table = s.u && unary_table(g, n, *s.u, s.t, s.ga);
    s.finished = n.snapped;
    n.snapped = false;  // (run_node's flag: the chain finishes its nodes itself)
  }
  total_ = out(g, g.nodes[first]).numel();
  whole_ = whole_table(g);
  if (!whole_) join_silus();
  return true;
}

void ChainRun::join_silus() {
  for (size_t k = 0; k + 1 < steps_.size(); k++) {
    Step &sg = steps_[k], &m = steps_[k + 1];
    const Node &sn = *sg.n, &mn = *m.n;
    // the Sigmoid's output: plain float32 (nothing to finish), unclamped, local to the chain
    if (sn.type != Sigmoid || sg.table || sg.slot < 0 || sg.o->dtype != FP32 || std::isfinite(sn.out_min) ||
        std::isfinite(sn.out_max) || mn.type != Multiply || !m.b)
      continue;
    const uint32_t x = sn.inputs[0], y = sn.output;
    if (!(mn.inputs[0] == x && mn.inputs[1] == y) && !(mn.inputs[0] == y && mn.inputs[1] == x)) continue;
    bool read_later = false;  // (by a step after the Multiply: it then needs the Sigmoid's values)
    for (size_t j = k + 2; j < steps_.size() && !read_later; j++)
      for (uint32_t id : steps_[j].n->inputs) read_later |= id == y;
    if (read_later) continue;
    sg.skip = true;
    m.silu = true;
    m.from[0] = sg.from[0];
    m.x[0] = sg.x[0];
    k++;
  }
}

void ChainRun::step(const Step& s, const float* x0, const float* x1, float* y, int64_t len) const {
  const Node& n = *s.n;
  if (s.copies && !std::isfinite(n.out_min) && !std::isfinite(n.out_max)) {
    finalize_range(*s.o, x0, y, len);  // copied and finished in one pass
    return;
  }
  if (s.table) grid_table_lookup(s.ga, s.t, x0, y, len);
  else if (s.u) s.u->f(x0, y, len, n.fparam);
  else if (s.silu) vec_silu(x0, y, len);
  else s.b->same_shape(x0, x1, y, len);
  clamp_range(y, len, n.out_min, n.out_max);  // as run_node: clamp_output, then finalize_value
  if (!s.finished) finalize_range(*s.o, y, y, len);
}

bool ChainRun::whole_table(const Graph& g) {
  const size_t count = steps_.size();
  if (count < 2 || steps_[0].from[0] >= 0) return false;
  const uint32_t in_id = steps_[0].n->inputs[0];
  const Value& a = g.values[in_id];
  const Value& grid = a.grid_source != kInvalidId ? g.values[a.grid_source] : a;  // (see Value::grid_source)
  if (!on_int8_grid(grid) || !(grid.scale > 0.f)) return false;
  // (a lookup is a gather, slower than a few vector instructions: only where a step is a costly
  // function or a lookup already - a SiLU's sigmoid, not a hardswish)
  if (std::none_of(steps_.begin(), steps_.end(), [](const Step& s) { return s.table || (s.u && s.u->costly); }))
    return false;
  // vals[0]: the input's grid points (as snap_to_grid writes them) and NaN; vals[k + 1]: step k's
  // outputs of them
  std::vector<float> vals((count + 1) * 257);
  whole_grid_ = grid_of(grid);
  for (int t = 0; t < 256; t++) vals[(size_t)t] = (whole_grid_.lo + (float)t) * whole_grid_.scale;
  vals[256] = NAN;
  for (size_t k = 0; k < count; k++) {
    const Step& s = steps_[k];
    // every output but the last stays in the chain (a slot or an alias), the last leaves it
    if (k + 1 < count ? (s.slot < 0 && !s.alias) : (s.slot >= 0 || s.alias)) return false;
    const float* x[2] = {nullptr, nullptr};
    for (size_t i = 0; i < s.n->inputs.size(); i++) {
      const uint32_t id = s.n->inputs[i];
      for (size_t j = k; j-- > 0 && !x[i];)  // the latest earlier step writing it (as prepare)
        if (steps_[j].n->output == id) x[i] = vals.data() + (j + 1) * 257;
      if (!x[i] && id == in_id) x[i] = vals.data();
      if (!x[i]) return false;  // (a value from outside the chain)
    }
    float* y = vals.data() + (k + 1) * 257;
    if (s.alias) std::copy(x[0], x[0] + 257, y);  // (changes nothing: later steps read its input)
    else step(s, x[0], x[1], y, 257);
  }
  std::copy(vals.end() - 257, vals.end(), whole_table_);
  return true;
}

void ChainRun::run(int64_t begin, int64_t end) const {
  if (whole_) {  // one lookup from the chain's input to its last output
    grid_table_lookup(whole_grid_, whole_table_, steps_[0].x[0] + begin, steps_.back().y + begin, end - begin);
    return;
  }
  ETNP_THREAD_LOCAL(FloatBuffer, buf);  // this thread's chunks of the local outputs
  if (buf.size() < (size_t)(slots_ * kChunk)) buf.resize((size_t)(slots_ * kChunk));
  float* lb = buf.data();
  for (int64_t b = begin; b < end; b += kChunk) {
    const int64_t len = std::min(kChunk, end - b);
    for (const Step& s : steps_) {
      if (s.alias || s.skip) continue;
      float* y = s.slot >= 0 ? lb + s.slot * kChunk : s.y + b;
      const float* x0 = s.from[0] >= 0 ? lb + s.from[0] * kChunk : s.x[0] + b;
      const float* x1 = s.from[1] >= 0 ? lb + s.from[1] * kChunk : s.u ? nullptr : s.x[1] + b;
      step(s, x0, x1, y, len);
    }
  }
}

bool run_chain(KernelContext& ctx, Graph& g, size_t first, size_t count, const uint8_t* local) {
  ChainRun r;
  if (!r.prepare(g, first, count, local)) return false;
  constexpr int64_t C = ChainRun::kChunk;
  const int64_t chunks = (r.total() + C - 1) / C;
  parallel(ctx, chunks, 4, [&](int64_t c0, int64_t c1) { r.run(c0 * C, std::min(r.total(), c1 * C)); });
  return true;
}

}  // namespace etnp::xnn
