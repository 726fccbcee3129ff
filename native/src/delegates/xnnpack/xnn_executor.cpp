// The XNNPACK delegate: reads the graph at method load, prepares weights once, and
// runs the nodes in order on each call, moving data in/out of the delegate's EValues.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/profiler.h"
#include "delegates/backend.h"
#include "delegates/xnnpack/xnn_chain.h"
#include "delegates/xnnpack/xnn_graph.h"
#include "delegates/xnnpack/xnn_io.h"
#include "delegates/xnnpack/xnn_node_util.h"
#include "delegates/xnnpack/xnn_ops.h"
#include "delegates/xnnpack/xnn_reuse_plan.h"
#include "delegates/xnnpack/xnn_weight_cache.h"
#include "kernels/kernel_util.h"
#include "os/probes.h"
#include "runtime/runtime.h"
#include "util/compiler.h"
#include "util/sha256.h"
#include "util/weight_arena.h"

namespace etnp {
namespace {

using namespace xnn;

class XnnDelegate : public DelegateHandle {
 public:
  // CACHE (may be null): the method load's weight cache, where this delegate's packed state is
  // found under KEY (then viewed in its mapping, nothing packed) or added (after packing).
  // PROGRAM: where the filters' bytes (Value::source) are read from right before packing and
  // given back to right after.
  // KEYED: the named data the graph read under content keys (the SHA-256 of their bytes, as
  // ExecuTorch's serializer names them), each with its key: on a cache miss, checked before the
  // packed state is written - a data file damaged since its export would otherwise leave packed
  // weights that a later load, the file repaired, takes for its own (a hit reads no weights).
  XnnDelegate(Graph g, const Program& program, ThreadPool* pool, BufferBank* bank, WeightCacheSession* cache,
              uint64_t key, std::vector<std::pair<Span, std::string>> keyed = {})
      : g_(std::move(g)), bank_(bank) {
    lower_depthwise_as_conv(g_);
    lower_stride1_deconv_as_conv(g_);
    lower_dead_taps(g_);
    for (size_t i = 0; i < g_.nodes.size(); i++) g_.nodes[i].origin = (uint32_t)i;
    if (cache) {
      const WeightCacheSession::Section s = cache->find(key);
      if (s.data && read_packed_state(s.data, s.size, g_)) {
        mapping_ = cache->mapping();  // (the views' memory: held as long as the delegate)
        mapped_bytes_ = s.size;
      }
    }
    if (cache && !mapping_) expected_ = std::move(keyed);
    if (!mapping_) pack_nodes(program, pool);
    if (cache && !mapping_) check_unpacked_named_data(program);
    for (auto& v : g_.values) v.raw = nullptr;  // program bytes are only read while packing
    fuse_nodes(g_);  // (after packing: fusions depend on packed weights)
    // static-int8 convolutions run on their int8 filters (xnn_static_q8.cpp): the float packing is
    // kept only where a fused pipeline reads it
    if (cache && !mapping_) dropped_.assign(g_.nodes.size() + 1, {});
    for (auto& n : g_.nodes) {
      if (!dropped_.empty() && n.origin < dropped_.size() && n.type == Conv2d && !n.qconv.empty() &&
          n.residual == kInvalidId && n.nchw_transposed == kInvalidId)
        for (const PackedB& p : n.packed) dropped_[n.origin].emplace_back(p.K, p.N);
      for (Node* f : {n.pre.get(), n.post.get()})
        if (f) std::vector<PackedQ8>().swap(f->qconv);
      if (n.type == Conv2d && !n.qconv.empty() && n.residual == kInvalidId && n.nchw_transposed == kInvalidId)
        std::vector<PackedB>().swap(n.packed);
      for (Node* p : {&n, n.pre.get(), n.post.get()})
        if (p) pack_deferred(program, pool, g_, *p);
    }
    if (!mapping_) plan_winograd(pool, g_);  // (from the direct packing: a cache holds the result)
    for (auto& v : g_.values) v.qraw = nullptr;  // (the program's bytes may be given back now)
    if (cache && !mapping_ && named_data_ok_)
      cache->add(key, [this](SectionWriter& w) { write_packed_state(w, g_, dropped_); });
    expected_.clear();
    for (auto& n : g_.nodes) plan_exact_requant(g_, n);  // (views of the packings: none changes after)
    chains_ = plan_chains(g_);
    chain_locals_ = plan_chain_locals(g_, chains_);
    then_ = plan_producer_chains(g_, chains_);
    plan_codes();
    plan_buffer_reuse();
    plan_borrowing();
    plan_moves();
    // Constant filters used only through packed weights need not be kept twice (nor their
    // quantization scales).
    std::vector<int> uses(g_.values.size(), 0), packed_uses(g_.values.size(), 0);
    auto count = [&](const Node& n) {
      for (size_t k = 0; k < n.inputs.size(); k++) {
        if (n.inputs[k] >= g_.values.size()) continue;
        uses[n.inputs[k]]++;
        if (k == 1 && (!n.packed.empty() || n.qpacked.N > 0 || !n.qconv.empty() || !n.qblocks.empty() ||
                       n.qb4.N > 0))
          packed_uses[n.inputs[k]]++;
      }
    };
    for (auto& n : g_.nodes) {
      count(n);
      if (n.pre) count(*n.pre);
      if (n.post) count(*n.post);
    }
    for (uint32_t id : g_.output_ids) uses[id]++;
    for (size_t i = 0; i < g_.values.size(); i++)
      if (g_.values[i].is_constant && uses[i] > 0 && uses[i] == packed_uses[i]) {
        g_.values[i].data.release();
        std::vector<float>().swap(g_.values[i].scales);  // (the packings hold their own scales)
      }
    plan_binding();
    plan_bank();
  }

  // Packs each node's constant filters, reading their program bytes right before and giving
  // them back once the last node packing them has (so a program's weights are never resident
  // twice over, as program bytes and packed, but one filter at a time). Bytes a program has not
  // read from its file yet are read into a scratch buffer (Program::borrow), reused node after
  // node, instead of into fresh pages of the program's copy.
  void pack_nodes(const Program& program, ThreadPool* pool) {
    std::vector<int> left(g_.values.size(), 0);  // nodes yet to pack each value with a source
    for (const Node& n : g_.nodes)
      for_each_source(n, [&](uint32_t id) { left[id]++; });
    // (one buffer per filter of a node, each of the largest filter's size, allocated when first
    // needed - a copy is made only of bytes not read yet -, not initialised, and the OS's pages
    // from 1 MiB on: given back when packing ends)
    size_t largest = 0;
    for (const Value& v : g_.values) largest = std::max(largest, v.source.size);
    std::vector<std::vector<uint8_t, UninitAllocator<uint8_t>>> scratch;
    for (Node& n : g_.nodes) {
      BorrowedSources borrowed{g_, {}};
      for_each_source(n, [&](uint32_t id) {
        const size_t k = borrowed.ids.size();
        Value& v = g_.values[id];
        const uint8_t* at = program.borrow(v.source, [&] {
          if (scratch.size() <= k) scratch.resize(k + 1);
          if (scratch[k].empty()) scratch[k].resize(largest);
          return scratch[k].data();
        });
        borrowed.ids.push_back(id);
        borrowed.point(v, at);
        check_named_data(v.source, at);
      });
      prepare_node(pool, g_, n);
      borrowed.restore();
      for_each_source(n, [&](uint32_t id) {
        if (--left[id] == 0) program.release(g_.values[id].source);
      });
    }
  }
  // Named data under a content key (expected_) whose bytes at AT do not hash to it: the cache is
  // not written (named_data_ok_). Each span once.
  void check_named_data(Span s, const uint8_t* at) {
    std::string digest;  // (hashed once, for every entry of the span: a constant read twice)
    for (auto& e : expected_) {
      if (e.first.data == s.data && e.first.size == s.size && !e.second.empty()) {
        if (digest.empty()) digest = Sha256::hex(at, s.size);
        if (digest != e.second) named_data_ok_ = false;
        e.second.clear();  // (checked)
      }
    }
  }
  // ... and those no node packed (biases, scales, constants decoded by read_graph: resident)
  void check_unpacked_named_data(const Program& program) {
    for (auto& e : expected_)
      if (!e.second.empty()) {
        program.ensure(e.first);
        check_named_data(e.first, e.first.data);
      }
  }
  // Filters pointed at copies of their bytes while a node packs (Value::raw / qraw: at the
  // program's bytes otherwise), pointed back when it is done or fails.
  struct BorrowedSources {
    Graph& g;
    std::vector<uint32_t> ids;
    static void point(Value& v, const uint8_t* at) {
      if (v.raw) v.raw = reinterpret_cast<const float*>(at);
      if (v.qraw) v.qraw = at;
    }
    void restore() {
      for (uint32_t id : ids) point(g.values[id], g.values[id].source.data);
      ids.clear();
    }
    ~BorrowedSources() { restore(); }
  };
  // F(id) for each distinct input of N whose bytes are the program's (Value::source)
  template <class F>
  void for_each_source(const Node& n, F f) const {
    for (size_t k = 0; k < n.inputs.size(); k++) {
      const uint32_t id = n.inputs[k];
      if (id >= g_.values.size() || !g_.values[id].source.data) continue;
      if (std::find(n.inputs.begin(), n.inputs.begin() + (std::ptrdiff_t)k, id) != n.inputs.begin() + (std::ptrdiff_t)k)
        continue;
      f(id);
    }
  }

  bool output_args(std::vector<size_t>& out) const override {
    out.assign(g_.output_args.begin(), g_.output_args.end());
    return true;
  }

  void set_weights_stream(bool on) override {
    for (Node& n : g_.nodes)
      for (Node* x : {&n, n.pre.get(), n.post.get()})
        if (x) x->qb4.stream = on;
  }

  void add_memory(DelegateMemory& m) const override {
    auto bytes = [](const auto& v) { return (uint64_t)v.capacity() * sizeof(v[0]); };
    auto q8 = [&](const PackedQ8& p) { return bytes(p.data) + bytes(p.col_sum) + bytes(p.scale) + bytes(p.bias_q); };
    auto node = [&](const Node& n) {
      for (const PackedB& p : n.packed) m.packed_weights += bytes(p.data) + bytes(p.half);
      m.packed_weights += q8(n.qpacked) + bytes(n.qdw.w) + bytes(n.qdw.scale) + bytes(n.bias);
      for (const PackedQ8& p : n.qconv) m.packed_weights += q8(p);
      for (const PackedQ8& p : n.qblocks) m.packed_weights += q8(p);
      for (const PackedQ8& p : n.qexact) m.packed_weights += q8(p);  // (views: their scales and biases)
      m.packed_weights += bytes(n.qdw_exact.scale) + bytes(n.qdw_exact.bias_q);
      m.packed_weights += bytes(n.qb4.data);
    };
    m.mapped_weights += mapped_bytes_;  // (the views' bytes: a weight cache file's shared pages)
    for (const Node& n : g_.nodes) {
      node(n);
      if (n.pre) node(*n.pre);
      if (n.post) node(*n.post);
    }
    for (const Value& v : g_.values) {
      const uint64_t b = bytes(v.data) + bytes(v.q8) + bytes(v.row_scale) + bytes(v.row_zp) + bytes(v.scales);
      (v.is_constant ? m.constants : m.values) += b;
    }
    const Scratch& s = scratch_;
    m.scratch += bytes(s.col) + bytes(s.q8) + bytes(s.q8col) + bytes(s.padded) + bytes(s.expanded) + bytes(s.conv_rows) +
                 bytes(s.conv_koff) + bytes(s.row_scale) + bytes(s.row_zp) + bytes(s.block_start);
  }

  void execute(KernelContext& ctx, EValue** args, size_t nargs) override {
    size_t ni = g_.input_ids.size(), no = g_.output_ids.size();
    if (nargs < g_.num_args)
      throw_exec("XNNPACK delegate expects " + std::to_string(g_.num_args) + " arguments, got " + std::to_string(nargs));
    // (an output is written in place when bound, and a scalar one without a resize: the check
    // resize_tensor makes for kernels, made before anything runs)
    for (size_t k = 0; k < no; k++)
      if (args[g_.output_args[k]]->tag == Tag::Tensor && args[g_.output_args[k]]->t.is_constant)
        throw_exec("XNNPACK delegate output " + std::to_string(k) + " is a constant of the program (corrupt program?)");
    BankGuard banked{this};
    BorrowGuard borrowed{this};
    for (size_t k = 0; k < ni; k++) load_input(*args[g_.input_args[k]], g_.values[g_.input_ids[k]], k, borrowable_[k]);
    BindGuard bound{this};
    bind_outputs(args);
    SwapGuard guard{this};
    scratch_.moves.clear();
    for (size_t i = 0; i < g_.nodes.size();) {
      // a node and the chain it is handed (then_), or a chain, or one node
      const size_t then = then_[i];
      const size_t len = then ? 1 + then : std::max<size_t>(1, chains_[i]), last = i + len - 1;
      // (the swaps of a chain's nodes are made before it: plan_buffer_reuse gives them only
      // buffers of values dead before the chain - or before the node handing it its input)
      for (; guard.done < reuse_.end[last]; guard.done++) {
        swap_buffers(reuse_.swaps[guard.done]);
        scratch_.moves.emplace_back(reuse_.swaps[guard.done].taker, reuse_.swaps[guard.done].giver);
      }
      for (; codes_done_ < code_reuse_.end[last]; codes_done_++) swap_codes(code_reuse_.swaps[codes_done_]);
      const int64_t t0 = ctx.profiler ? Profiler::now() : 0;
      if (ETNP_PROBE_ENABLED(xnn_node_begin)) ETNP_PROBE2(xnn_node_begin, i, event_name(i, len).c_str());
      if (then) {
        ChainHook hook{&g_, i + 1, then, chain_locals_.data() + i + 1, {}};
        struct Unhook {
          Node& n;
          ~Unhook() { n.then = nullptr; }
        } unhook{g_.nodes[i]};
        g_.nodes[i].then = &hook;
        run_node(ctx, g_, g_.nodes[i], scratch_);
        g_.nodes[i].then = nullptr;
        if (!hook.done && (then == 1 || !run_chain(ctx, g_, i + 1, then, chain_locals_.data() + i + 1)))
          for (size_t k = i + 1; k <= last; k++) run_node(ctx, g_, g_.nodes[k], scratch_);
      } else if (len == 1 || !run_chain(ctx, g_, i, len, chain_locals_.data() + i)) {
        for (size_t k = i; k <= last; k++) run_node(ctx, g_, g_.nodes[k], scratch_);
      }
      if (ETNP_PROBE_ENABLED(xnn_node_end)) ETNP_PROBE2(xnn_node_end, i, event_name(i, len).c_str());
      if (ctx.profiler) profile_event(*ctx.profiler, i, len, t0, Profiler::now());  // (Method.profile)
      i += len;
    }
    for (size_t k = 0; k < no; k++) store_output(g_.values[g_.output_ids[k]], *args[g_.output_args[k]], k);
  }

 private:
  // Float32 graph outputs are written straight into the output tensors (ValueBuffer::bind), as
  // XNNPACK does with its external values: no copy out, no delegate buffer of their size. Not
  // where the value is also an input or constant, repeats another output, or the tensor's memory
  // overlaps another bound output's or an input tensor's (a corrupt program's plan: then the
  // value computes in its own buffer and is copied, as before).
  void bind_outputs(EValue** args) {
    struct Range {
      const char* b;
      const char* e;
    };
    std::vector<Range> taken;
    auto overlaps = [&](const char* b, const char* e) {
      for (const Range& r : taken)
        if (b < r.e && r.b < e) return true;
      return false;
    };
    for (uint32_t a : g_.input_args) {
      const EValue* e = args[a];
      if (e->tag == Tag::Tensor && e->t.data) {
        const char* b = (const char*)e->t.data;
        taken.push_back({b, b + std::max(e->t.capacity, e->t.nbytes())});
      }
    }
    for (size_t k = 0; k < g_.output_ids.size(); k++) {
      if (!bindable_[k]) continue;
      EValue* e = args[g_.output_args[k]];
      if (e->tag != Tag::Tensor || e->t.dtype != DType::F32 || !e->t.data || e->t.capacity < sizeof(float)) continue;
      const char* b = (const char*)e->t.data;
      const char* end = b + e->t.capacity;
      if (overlaps(b, end)) continue;
      taken.push_back({b, end});
      g_.values[g_.output_ids[k]].data.bind((float*)e->t.data, e->t.capacity / sizeof(float));
    }
  }
  struct BindGuard {
    XnnDelegate* d;
    ~BindGuard() {
      for (uint32_t id : d->g_.output_ids) d->g_.values[id].data.unbind();
    }
  };
  void plan_binding() {
    bindable_.assign(g_.output_ids.size(), false);
    std::vector<int> times(g_.values.size(), 0);
    for (uint32_t id : g_.output_ids) times[id]++;
    for (uint32_t id : g_.input_ids) times[id] += 2;
    for (size_t k = 0; k < g_.output_ids.size(); k++) {
      const Value& v = g_.values[g_.output_ids[k]];
      bindable_[k] = times[g_.output_ids[k]] == 1 && v.dtype == FP32 && v.quant == Quant::None && !v.is_constant &&
                     !v.as_codes && v.grid_source == kInvalidId;
    }
  }

  // The values whose buffers are the runtime's BufferBank slots during a call (in slot order):
  // every value a call writes that holds a buffer of its own at the call's start - not
  // constants, not the takers of planned reuse (they are handed another value's buffer), not
  // values kept as int8 codes alone. Their `data` is empty between calls.
  void plan_bank() {
    std::vector<uint8_t> taker(g_.values.size(), 0), code_taker(g_.values.size(), 0), used(g_.values.size(), 0);
    for (const Reuse& r : reuse_.swaps) taker[r.taker] = 1;
    for (const Reuse& r : code_reuse_.swaps) code_taker[r.taker] = 1;
    auto use = [&](const Node& n) {
      for (uint32_t id : n.inputs) if (id < used.size()) used[id] = 1;
      for (uint32_t id : {n.output, n.output2, n.unfused, n.nchw_transposed, n.nchw_output}) if (id < used.size()) used[id] = 1;
    };
    for (const Node& n : g_.nodes) {
      use(n);
      if (n.pre) use(*n.pre);
      if (n.post) use(*n.post);
    }
    for (uint32_t id : g_.input_ids) used[id] = 1;
    for (uint32_t id : g_.output_ids) used[id] = 1;
    for (uint32_t id = 0; id < g_.values.size(); id++) {
      const Value& v = g_.values[id];
      if (used[id] && !taker[id] && !v.is_constant && !v.as_codes) {
        banked_.push_back(id);
        g_.values[id].data.release();  // (any buffer made at load: the bank's from now on)
      }
      if (used[id] && !code_taker[id] && !v.is_constant && (v.as_codes || dynamically_quantized(v))) {
        banked_codes_.push_back(id);
        std::vector<uint8_t>().swap(g_.values[id].q8);
      }
    }
    // largest first: slot k grows to the k-th largest buffer of whichever delegate has the
    // largest, so the bank is close to the largest delegate's need (in value order, one
    // delegate's big buffer and another's could take different slots and both be kept)
    auto planned = [&](uint32_t id) {
      int64_t n = 1;
      for (int64_t d : g_.values[id].dims)
        if (d < 0 || etnp::mul_overflow(n, d, &n)) return int64_t(0);
      return n;
    };
    std::stable_sort(banked_.begin(), banked_.end(), [&](uint32_t a, uint32_t b) { return planned(a) > planned(b); });
    std::stable_sort(banked_codes_.begin(), banked_codes_.end(), [&](uint32_t a, uint32_t b) { return planned(a) > planned(b); });
  }
  // Lends the bank's slots to the banked values for the call (taken before anything is bound,
  // given back after SwapGuard has undone the call's exchanges); a nested call (a delegate run
  // while another holds the bank) keeps buffers of its own.
  struct BankGuard {
    XnnDelegate* d;
    bool held = false;
    explicit BankGuard(XnnDelegate* dd) : d(dd) {
      BufferBank* b = d->bank_;
      if (!b || b->in_use) return;
      if (b->slots.size() < d->banked_.size()) b->slots.resize(d->banked_.size());
      if (b->code_slots.size() < d->banked_codes_.size()) b->code_slots.resize(d->banked_codes_.size());
      swap_all(b);
      b->in_use = held = true;
    }
    ~BankGuard() {
      if (!held) return;
      swap_all(d->bank_);
      d->bank_->in_use = false;
    }
    void swap_all(BufferBank* b) {
      for (size_t k = 0; k < d->banked_.size(); k++) d->g_.values[d->banked_[k]].data.swap_own(b->slots[k]);
      for (size_t k = 0; k < d->banked_codes_.size(); k++) d->g_.values[d->banked_codes_[k]].q8.swap(b->code_slots[k]);
    }
  };

  // The planned takeovers (xnn_reuse_plan.h): float32 buffers, and byte codes (made in plan
  // order and undone from codes_done_ down: nothing else moves codes).
  void swap_buffers(const Reuse& r) { g_.values[r.taker].data.swap(g_.values[r.giver].data); }
  void swap_codes(const Reuse& r) { g_.values[r.taker].q8.swap(g_.values[r.giver].q8); }
  // Every buffer exchange of a call - the planned swaps and the reshapes' moves (xnn_layout.cpp)
  // - goes into one log (Scratch::moves) in the order made; undoing it newest first restores the
  // initial assignment, so every call starts from it.
  struct SwapGuard {
    XnnDelegate* d;
    size_t done = 0;
    ~SwapGuard() {
      auto& mv = d->scratch_.moves;
      for (size_t k = mv.size(); k-- > 0;) d->g_.values[mv[k].first].data.swap(d->g_.values[mv[k].second].data);
      mv.clear();
      for (size_t k = d->codes_done_; k-- > 0;) d->swap_codes(d->code_reuse_.swaps[k]);
      d->codes_done_ = 0;
    }
  };

  void plan_buffer_reuse() {
    const size_t nn = g_.nodes.size();
    std::vector<int64_t> chain_end(nn);
    for (size_t i = 0; i < nn; i++)  // (a node handed a chain lives as long as the chain)
      chain_end[i] = then_[i] ? (int64_t)(i + then_[i]) : chains_[i] >= 1 ? (int64_t)(i + chains_[i] - 1) : chain_end[i - 1];
    reuse_ = plan_reuse(g_, chain_end, false);
    code_reuse_ = plan_reuse(g_, chain_end, true);
  }

  // Whether node n runs as an int8 GEMM or depthwise convolution on its input's byte codes
  // (xnn_static_q8.cpp: conv2d_q8, fully_connected_q8, depthwise_q8_rows - every condition under
  // which they decline is ruled out here, or makes them fail with an error). (A chain
  // handed to it reads its output, which then has a reader that is no GEMM.)
  bool int8_gemm(size_t i) const {
    const Node& n = g_.nodes[i];
    if (n.pre || n.post || n.residual != kInvalidId || n.inputs.empty() || n.inputs[0] >= g_.values.size() ||
        chains_[i] != 1)
      return false;
    const Value& x = g_.values[n.inputs[0]];
    if (!on_int8_grid(x) || !(x.scale > 0.f)) return false;
    if (n.type == Conv2d) return n.nchw_transposed == kInvalidId && n.groups > 0 &&
                                        n.qconv.size() == (n.qconv_grouped ? 1 : n.groups);
    if (n.type == DepthwiseConv2d) return n.qdw.taps > 0;
    return n.type == FullyConnected && n.qpacked.N > 0;
  }
  // A static-int8 value that one int8 node writes and only int8 nodes read - GEMM and depthwise
  // nodes (input 0; no fused part reads it), int8 adds, concatenations, max pooling, transposes
  // and reshapes (any input), Converts from or to float32 (int8_convert: not in a chain), global
  // average pooling (int8_gap: reads only) - is
  // kept as its byte codes alone (Value::as_codes): the writer's epilogue produces the next
  // node's input, no float32 grid points between them. Graph inputs and outputs and
  // constants stay float32. ETNP_XNN_CODES=off keeps every value float32.
  void plan_codes() {
    const size_t nv = g_.values.size();
    std::vector<uint8_t> ok(nv, 1), written(nv, 0), read(nv, 0);
    for (uint32_t id : g_.input_ids) ok[id] = 0;
    for (uint32_t id : g_.output_ids) ok[id] = 0;
    std::vector<uint8_t> handed(g_.nodes.size(), 0);  // (run as a producer's chain, on its float32 output)
    for (size_t k = 0; k < g_.nodes.size(); k++)
      for (size_t j = k + 1; j <= k + (size_t)then_[k] && j < g_.nodes.size(); j++) handed[j] = 1;
    std::vector<uint8_t> moved(nv, 0);  // written by a move (transpose, reshape, concatenation, max pooling)
    for (size_t i = 0; i < g_.nodes.size(); i++)
      if (moves(i) && g_.nodes[i].output < nv) moved[g_.nodes[i].output] = 1;
    for (size_t i = 0; i < g_.nodes.size(); i++) {
      const Node& n = g_.nodes[i];
      const bool any_input = (int8_add(g_, n) || moves(i)) && chains_[i] == 1;  // (every input as codes)
      // A Convert's int8 side (not in a chain): its output, or an input that a move wrote - one
      // that a GEMM or an add wrote is better as their float32 grid points, which the Convert
      // takes over (plan_moves), than as codes it would turn into floats in a pass of its own.
      const bool convert = int8_convert(g_, n) && chains_[i] == 1 && !handed[i] &&
                           (!on_int8_grid(g_.values[n.inputs[0]]) || moved[n.inputs[0]]);
      // a global average pooling reads its input as codes (integer sums); its output stays float32
      const bool gap = int8_gap(g_, n) && gap_reads_codes(n) && !handed[i];
      const bool q = int8_gemm(i) || any_input || convert || gap;
      for (size_t j = 0; j < n.inputs.size(); j++)
        if (n.inputs[j] < nv) {
          read[n.inputs[j]] = 1;
          if (!q || (j != 0 && !any_input)) ok[n.inputs[j]] = 0;  // (a GEMM or depthwise node reads input 0 as codes)
        }
      for (const Node* f : {n.pre.get(), n.post.get()})
        if (f)
          for (uint32_t id : f->inputs) if (id < nv) ok[id] = 0;
      for (const Node* p : {&n, (const Node*)n.pre.get(), (const Node*)n.post.get()})
        if (p)
          for (uint32_t o : {p->output, p->output2, p->unfused})
            if (o < nv) {
              if (written[o] || !q || gap || p != &n || o != n.output) ok[o] = 0;
              written[o] = 1;
            }
    }
    std::vector<uint8_t> codes(nv, 0);
    for (uint32_t id = 0; id < nv; id++) {
      const Value& v = g_.values[id];
      codes[id] = ok[id] && written[id] && read[id] && !v.is_constant && v.external_id == kInvalidId &&
                  on_int8_grid(v) && v.scale > 0.f;
    }
    // A concatenation, max pooling, transpose or reshape moves codes only where all its inputs
    // and its output are codes: a float32 one among them would be converted to codes and back
    // around the move (three passes for one). Where one is not, none of them is (repeated until nothing changes).
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < g_.nodes.size(); i++) {
        const Node& n = g_.nodes[i];
        if (!moves(i)) continue;
        bool all = codes[n.output] != 0;
        for (uint32_t id : n.inputs) all = all && codes[id];
        if (all) continue;
        auto drop = [&](uint32_t id) {
          changed = changed || codes[id];
          codes[id] = 0;
        };
        for (uint32_t id : n.inputs) drop(id);
        drop(n.output);
      }
    }
    // a depthwise node with an int8 filter on an int8-grid input runs on codes, its input's or
    // ones converted from its float32 grid points: exact integer sums, as XNNPACK's. (The float
    // kernel's rounded sums differ from them by a quantization step now and then - and a fused
    // chain writing the input as float32 would then change the result.) ETNP_XNN_CODES=off keeps
    // the values float32, the same arithmetic.
    for (Node& n : g_.nodes)
      n.dw_int8 = n.type == DepthwiseConv2d && n.qdw.taps > 0 && !n.inputs.empty() && n.inputs[0] < nv && n.output < nv;
    if (!codes_enabled()) return;
    for (uint32_t id = 0; id < nv; id++) g_.values[id].as_codes = codes[id] != 0;
  }
  bool moves(size_t i) const { return int8_moves(g_, g_.nodes[i]); }

  // A StaticReshape or a Convert whose input nothing else reads takes over the input's buffer
  // instead of copying it (xnn_layout.cpp, xnn_elementwise.cpp): values internal to the graph (not
  // inputs, outputs or constants); a reshape's of one datatype and grid, a Convert's snapped in
  // place afterwards. (A later planned swap may hand a moved buffer on; the buffers then grow
  // where needed on the first call, and the log puts them back after every call.)
  // Also: float32 values holding an int8-grid value's grid points (Value::grid_source).
  void plan_moves() {
    const size_t nv = g_.values.size();
    std::vector<int> readers(nv, 0);
    auto count = [&](const Node& n) {
      for (uint32_t id : n.inputs) if (id < nv) readers[id]++;
    };
    for (const Node& n : g_.nodes) {
      count(n);
      if (n.pre) count(*n.pre);
      if (n.post) count(*n.post);
    }
    for (uint32_t id : g_.input_ids) readers[id] += 2;
    for (uint32_t id : g_.output_ids) readers[id] += 2;
    std::vector<uint8_t> is_input(nv, 0), is_output(nv, 0);
    for (uint32_t id : g_.input_ids) is_input[id] = 1;
    for (uint32_t id : g_.output_ids) is_output[id] = 1;
    auto plain_f32 = [&](const Value& v) {
      return v.dtype == FP32 && v.quant == Quant::None && !v.is_constant && !dynamically_quantized(v);
    };
    for (size_t i = 0; i < g_.nodes.size(); i++) {
      Node& n = g_.nodes[i];
      const bool in_chain = chains_[i] != 1;  // (run chunk by chunk: no buffer taken over)
      // A float32 unary or binary node one of whose inputs - of the output's shape, internal to
      // the graph, read by nothing else - dies there: the output takes that input's buffer and the
      // node runs in place (each element is read before it is written; xnn_elementwise.cpp checks
      // the shapes at run time). An attention's scaled scores no longer need a second buffer.
      const bool unary = unary_op(n.type) != nullptr, binary = binary_op(n.type) != nullptr;
      if ((unary || binary) && !in_chain && !n.pre && !n.post && n.inputs.size() == (binary ? 2u : 1u) &&
          n.output < nv && !is_output[n.output] && plain_f32(g_.values[n.output]) && !g_.values[n.output].as_codes) {
        for (uint8_t j = 0; j < n.inputs.size() && !n.move_input; j++) {
          const uint32_t a = n.inputs[j];
          if (a >= nv || a == n.output || readers[a] != 1 || is_input[a] || g_.values[a].external_id != kInvalidId ||
              !plain_f32(g_.values[a]) || g_.values[a].as_codes || (binary && n.inputs[0] == n.inputs[1]))
            continue;
          n.move_input = true;
          n.move_operand = j;
        }
        continue;
      }
      if ((n.type != StaticReshape && n.type != Convert && n.type != StaticTranspose && n.type != Softmax) ||
          n.inputs.size() != 1 || n.inputs[0] >= nv || n.output >= nv)
        continue;
      uint32_t a = n.inputs[0], o = n.output;
      Value &va = g_.values[a], &vo = g_.values[o];
      if (n.type != StaticTranspose)  // (a reshape of codes copies them: xnn_layout.cpp)
        n.move_input = readers[a] == 1 && !va.as_codes && !vo.as_codes && !va.is_constant && !vo.is_constant && va.external_id == kInvalidId &&
                       !dynamically_quantized(va) && !dynamically_quantized(vo) && !is_output[o] &&
                       (n.type == Convert || same_grid(va, vo)) && !in_chain &&
                       (n.type != Softmax || (va.dtype == FP32 && vo.dtype == FP32 && va.quant == Quant::None &&
                                              vo.quant == Quant::None));
      // A reshape of a graph input that no node writes (the caller's tensor or the input's own
      // buffer: fixed for the whole call) whose result only the reshape writes and only nodes
      // reading through cdata() read: the result is a view of the input (Value::raw), nothing copied.
      if (n.type == StaticReshape && !n.move_input && !in_chain && is_input[a] && !is_output[a] && !is_input[o] &&
          !is_output[o] && !vo.is_constant && same_grid(va, vo) && !dynamically_quantized(va) &&
          !dynamically_quantized(vo) && writes_of(a) == 0 && writes_of(o) == 1 && read_only_through_cdata(o)) {
        n.view_input = true;
        views_.push_back(o);
      }
      const bool no_clamp = !std::isfinite(n.out_min) && !std::isfinite(n.out_max);
      if (vo.dtype == FP32 && vo.quant == Quant::None && no_clamp && !va.is_constant) {
        if (on_int8_grid(va)) vo.grid_source = a;
        else if (va.grid_source != kInvalidId) vo.grid_source = va.grid_source;
      }
    }
    // a view has no buffer to take over: a node reading one copies it (through cdata())
    std::vector<uint8_t> is_view(nv, 0);
    for (uint32_t id : views_) is_view[id] = 1;
    for (Node& n : g_.nodes)
      if (n.move_input && n.move_operand < n.inputs.size() && n.inputs[n.move_operand] < nv &&
          is_view[n.inputs[n.move_operand]])
        n.move_input = false;
  }

  // A float32 input read only by nodes that read through Value::cdata() (transposes, convolutions
  // that absorbed one, fully connected, reshape, pad, elementwise, softmax, global pooling,
  // concatenation) is not copied: they read the caller's tensor in place (Value::raw) during the call.
  struct BorrowGuard {
    XnnDelegate* d;
    ~BorrowGuard() {
      for (uint32_t id : d->g_.input_ids) d->g_.values[id].raw = nullptr;
      for (uint32_t id : d->views_) d->g_.values[id].raw = nullptr;
    }
  };
  // Whether node n reads its input j through Value::cdata() (a fused node's parts not included)
  static bool reads_through_cdata(const Node& n, size_t j) {
    if (n.pre || n.post) return false;
    if (n.type == StaticTranspose || (n.type == Conv2d && n.nchw_transposed != kInvalidId) ||
        n.type == FullyConnected || n.type == StaticReshape || n.type == StaticConstantPad || n.type == StaticSlice)
      return j == 0;
    if (n.type == BatchMatrixMultiply) return j < 2;
    return unary_op(n.type) || binary_op(n.type) || n.type == Softmax || n.type == GlobalAvgPooling2d ||
           n.type == Concatenate2 || n.type == Concatenate3 || n.type == Concatenate4 || n.type == Concatenate5;
  }
  // Whether some node reads value id, and every node that does reads it through cdata() (no fused
  // part reads it): then it may be another buffer during a call (Value::raw)
  bool read_only_through_cdata(uint32_t id) const {
    bool used = false;
    for (const Node& n : g_.nodes) {
      for (size_t j = 0; j < n.inputs.size(); j++)
        if (n.inputs[j] == id) {
          if (!reads_through_cdata(n, j)) return false;
          used = true;
        }
      for (const Node* f : {n.pre.get(), n.post.get()})  // a fused part reading it: not in place
        if (f && std::find(f->inputs.begin(), f->inputs.end(), id) != f->inputs.end()) return false;
    }
    return used;
  }
  // How many times nodes (or their fused parts) write value id, output and output2 counted apart
  int writes_of(uint32_t id) const {
    int w = 0;
    for (const Node& n : g_.nodes)
      for (const Node* p : {&n, (const Node*)n.pre.get(), (const Node*)n.post.get()})
        if (p) w += (p->output == id) + (p->output2 == id);
    return w;
  }
  void plan_borrowing() {
    borrowable_.assign(g_.input_ids.size(), false);
    for (size_t k = 0; k < g_.input_ids.size(); k++) {
      uint32_t id = g_.input_ids[k];
      const Value& v = g_.values[id];
      if (v.dtype != FP32 || v.quant != Quant::None) continue;
      // a node writing it (a corrupt graph): its readers would read the caller's tensor, its
      // writer the value's own buffer - possibly of another shape
      bool ok = read_only_through_cdata(id) && writes_of(id) == 0;
      for (uint32_t o : g_.output_ids) ok = ok && o != id;
      borrowable_[k] = ok;
    }
  }

  // method.profile(): the node's time, name (with what was fused into it) and output shape
  // The name of the step that runs nodes [i, i + len) (fused or chained nodes: "XNNConv2d+Add"),
  // for the profile and the USDT probes. (Names are built once: building them every call took
  // longer than many of the nodes, time a profile then showed as the delegate's "outside nodes".)
  const std::string& event_name(size_t i, size_t len) const {
    if (profile_names_.size() != g_.nodes.size()) profile_names_.assign(g_.nodes.size(), std::string());
    std::string& name = profile_names_[i];
    if (name.empty()) {
      name = node_display_name(g_.nodes[i]);
      for (size_t k = i + 1; k < i + len; k++) name += "+" + node_display_name(g_.nodes[k]).substr(3);
    }
    return name;
  }

  // node i's span, or a chain's (nodes [i, i + len): one event named after them all)
  void profile_event(Profiler& p, size_t i, size_t len, int64_t t0, int64_t t1) const {
    const Node& n = g_.nodes[i];
    const std::string& name = event_name(i, len);
    std::string shape;
    if (n.output < g_.values.size())
      for (int64_t d : g_.values[n.output].shape) {
        if (!shape.empty()) shape += 'x';
        shape += std::to_string(d);
      }
    p.add(name, t0, t1, 1, (int32_t)i, std::move(shape));
  }

  Graph g_;
  std::shared_ptr<os::ReadOnlyMapping> mapping_;  // the weight cache file the packed state views, if any
  uint64_t mapped_bytes_ = 0;
  DroppedShapes dropped_;  // (while writing a weight cache section)
  // (a cache miss: named data to check before the section is written - a key emptied once checked -
  // and whether all of it matched)
  std::vector<std::pair<Span, std::string>> expected_;
  bool named_data_ok_ = true;
  BufferBank* bank_;              // the runtime's (outlives the delegate: the method holds the program, which holds the runtime)
  std::vector<uint32_t> banked_, banked_codes_;  // plan_bank: values lent the bank's slots / code slots
  Scratch scratch_;
  std::vector<bool> borrowable_;    // per graph input: read in place (see BorrowGuard)
  std::vector<bool> bindable_;      // per graph output: written in place (see bind_outputs)
  ReusePlan reuse_, code_reuse_;    // (plan_buffer_reuse)
  size_t codes_done_ = 0;            // code_reuse_.swaps made so far in a call (undone by SwapGuard)
  std::vector<uint32_t> chains_;    // plan_chains: chain lengths at their first nodes
  std::vector<uint32_t> views_;       // plan_moves: reshapes' results that view a graph input (Node::view_input)
  std::vector<uint8_t> chain_locals_;  // plan_chain_locals: outputs only their chain reads
  std::vector<uint32_t> then_;         // plan_producer_chains: chains handed to the node before them
  mutable std::vector<std::string> profile_names_;  // profile_event: each event's name, built once
};

}  // namespace

std::unique_ptr<DelegateHandle> xnnpack_init(const BackendInit& init) {
  weight_arena::LoadScope packing;  // (the weights packed below go to the weight arena)
  std::vector<Span> local;
  std::vector<Span>* consumed = init.consumed ? init.consumed : &local;
  std::vector<Span> unkeyed;
  std::vector<std::pair<Span, std::string>> keyed;  // (checked against their keys before a cache is written)
  Graph g = read_graph(init.blob, *init.program, consumed, &unkeyed, init.weight_cache ? &keyed : nullptr);
  uint64_t key = 0;
  if (init.weight_cache) {  // (the key hashes the blob and the named data its keys do not name)
    init.program->ensure(init.blob);
    for (const Span& s : unkeyed) init.program->ensure(s);
    key = weight_cache_key(init.blob, unkeyed);
  }
  // (everything the graph needs is copied out of the blob: packed, decoded or parsed)
  consumed->push_back(init.blob);
  Runtime& rt = init.program->runtime();
  return std::make_unique<XnnDelegate>(std::move(g), *init.program, &rt.pool(), &rt.buffer_bank(), init.weight_cache, key,
                                       std::move(keyed));
}

}  // namespace etnp
