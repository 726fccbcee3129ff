// Copies that move no byte (runtime/fused_calls.h): clone, alias_copy, unsqueeze_copy,
// squeeze_copy, view_copy, and - where at run time they leave every element in place - an
// expand_copy to the input's own shape and a permute_copy that moves only dims of size 1. An
// attention without the llama custom ops spends most of a decode step on such copies of its KV
// cache (unsqueezed, expanded, cloned, expanded to its own shape: HF-style grouped-query
// attention). Found at load (Method::elide_copies) and run as a one-instruction fused call whose
// kernel relabels - or declines, and the copy runs - in the first of these forms the memory plan
// allows (checked on the planned ranges, for any call's shapes):
//  - the result views the input's bytes, as et_view's does (CopyElider::elidable): nothing from
//    the copy to the last read of the result (or of a view of it) writes where those bytes are or
//    into the input, the result is written by the copy alone and not kept past the call; the
//    program's static views of the result move with it;
//  - (copies that relabel whatever the shapes) the input's kernel writes it where the result is
//    planned (writable_ahead): the input is read by nothing after the copy, and nothing else has
//    bytes there from that kernel to the copy;
//  - or that kernel runs at the copy instead, writing there (sinkable): what it reads is as it was,
//    nothing in between reads what it may write.
// Each keeps the bytes it relies on out of the later ones' reach (guards_).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "kernels/kernel_util.h"
#include "kernels/ops/copy_views.h"
#include "runtime/fused_calls.h"
#include "runtime/method.h"

namespace etnp {
namespace {

using Range = ByteRange;

class CopyElider {
 public:
  CopyElider(std::vector<Instruction>& ins, std::vector<EValue>& values, const std::vector<bool>& pinned,
             const std::vector<bool>& sources, const std::vector<bool>& written)
      : ins_(ins), values_(values), pinned_(pinned), sources_(sources), written_(written), uses_(values.size()),
        writers_(values.size()), viewed_(values.size(), -1), alias_base_(values.size(), -1),
        alias_at_(values.size(), -1), kept_(values.size(), false), root_(values.size()), reach_(values.size()),
        range_(values.size()) {
    for (size_t i = 0; i < ins.size(); i++) {
      const Instruction& x = ins[i];
      if (x.fused) chains_.emplace_back(x.fused->members.front(), x.fused->members.back());
      for (const EValue* a : x.args) {
        use(a, i);
        if (a->tag == Tag::TensorList || a->tag == Tag::OptTensorList)
          for (int64_t item : a->items)
            if (item >= 0 && (size_t)item < values.size()) use(&values[(size_t)item], i);
      }
      if (x.kind == Instruction::Kernel && std::strcmp(x.op, "executorch_prim::et_view.default") == 0 &&
          x.args.size() == 3 && id(x.args[0]) >= 0 && id(x.args[2]) >= 0) {
        viewed_[(size_t)id(x.args[2])] = id(x.args[0]);  // (writes only the view's metadata)
        continue;
      }
      for (const EValue* w : written_by(x)) writers_[(size_t)id(w)].push_back((uint32_t)i);
    }
    for (size_t v = 0; v < values.size(); v++) {
      int64_t r = (int64_t)v;
      for (int depth = 0; depth < 16 && viewed_[(size_t)r] >= 0; depth++) r = viewed_[(size_t)r];
      root_[v] = r;
      reach_[v] = {r};
      const EValue& e = values[v];
      if (e.tag != Tag::Tensor || e.t.is_constant || !e.t.data) continue;  // (no planned bytes)
      range_[v].lo = (const uint8_t*)e.t.data;
      range_[v].hi = range_[v].lo + std::max(e.t.capacity, e.t.nbytes());
      // a planned tensor nothing writes: it shares the bytes of another (a static view)
      if (!pinned[v] && writers_[v].empty() && viewed_[v] < 0) aliases_.push_back(v);
    }
    // a static view's base: the value written last, before its first read, over all its bytes
    for (int64_t a : aliases_) {
      const Range& r = range_[(size_t)a];
      for (int64_t k = uses_[(size_t)a].empty() ? -1 : (int64_t)uses_[(size_t)a].front() - 1; k >= 0; k--) {
        int64_t base = -1;
        for (const EValue* w : written_by(ins_[(size_t)k])) {
          const Range& b = range_[(size_t)id(w)];
          if (w->tag == Tag::Tensor && b.lo <= r.lo && r.hi <= b.hi) base = id(w);
        }
        if (base >= 0) {
          alias_base_[(size_t)a] = base;
          alias_at_[(size_t)a] = k;
          break;
        }
      }
    }
  }

  int run() {
    for (const Instruction& x : ins_)
      if (x.kind == Instruction::JumpFalse || x.kind == Instruction::Move) return 0;
    int n = 0;
    for (size_t c = 0; c < ins_.size(); c++) {
      Instruction& x = ins_[c];
      if (x.kind != Instruction::Kernel || x.fused || x.fused_away) continue;
      const CopyView* k = copy_view_of(x.op, x.args.size());
      if (!k || moves_elements(c, *k)) continue;
      std::vector<int64_t> family;
      uint32_t last = 0, p = 0;
      if (elidable(c, family, last)) view_input(c, *k, family, last);
      else if (k->always && writable_ahead(c, p)) write_ahead(c, *k, p);
      else if (k->always && sinkable(c, p)) sink(c, *k, p);
      else continue;
      n++;
    }
    return n;
  }

 private:
  // The copy's call: args x, the parameter (or none), out, then the static views to move with out
  // (null-terminated); out's planned bytes given back before each run.
  std::shared_ptr<FusedCall> call(size_t c, const CopyView& k) const {
    const Instruction& x = ins_[c];
    auto f = std::make_shared<FusedCall>();
    f->fn = k.view;
    f->name = "etnp::elided_copy";
    f->args = {x.args[0], k.param >= 0 ? x.args[(size_t)k.param] : nullptr, x.args.back()};
    f->members = {(uint32_t)c};
    f->replanned.push_back({x.args.back(), x.args.back()->t.data, x.args.back()->t.capacity});
    return f;
  }

  // The result views the input's bytes (so do its static views), which stay as they are until
  // its last read there.
  void view_input(size_t c, const CopyView& k, const std::vector<int64_t>& family, uint32_t last) {
    Instruction& x = ins_[c];
    auto f = call(c, k);
    for (int64_t v : family)
      if (alias_base_[(size_t)v] >= 0) {
        EValue* e = &values_[(size_t)v];
        f->args.push_back(e);
        f->replanned.push_back({e, e->t.data, e->t.capacity});
      }
    const bool moved = f->args.size() > 3;  // (static views moved along)
    f->args.push_back(nullptr);
    x.fused = f;
    // the result and its views now have the input's bytes - or, where the kernel may decline a
    // call (an expand, a permute; static views beyond the call's bytes), their own too: a later
    // copy of them keeps all of these where it reads them
    const std::vector<int64_t> from = reach_[(size_t)id(x.args[0])];
    if (k.always && !moved)
      for (int64_t v : family) reach_[(size_t)v].clear();
    Guard g{(uint32_t)c + 1, last, {}};
    for (int64_t r : from) {
      kept_[(size_t)r] = true;
      g.ranges.push_back(range_[(size_t)r]);
    }
    guards_.push_back(std::move(g));
    for (int64_t v : family)
      for (int64_t r : from)
        if (std::find(reach_[(size_t)v].begin(), reach_[(size_t)v].end(), r) == reach_[(size_t)v].end())
          reach_[(size_t)v].push_back(r);
  }

  // The input is written where the result is planned: its producer p writes there, the copy
  // only relabels.
  void write_ahead(size_t c, const CopyView& k, uint32_t p) {
    Instruction& x = ins_[c];
    const int64_t xi = id(x.args[0]), yi = id(x.args.back());
    Tensor& xt = values_[(size_t)xi].t;
    xt.data = values_[(size_t)yi].t.data;
    xt.capacity = values_[(size_t)yi].t.capacity;
    range_[(size_t)xi] = range_[(size_t)yi];
    guards_.push_back(Guard{p, (uint32_t)c, {range_[(size_t)yi]}});
    auto f = call(c, k);
    f->args.push_back(nullptr);
    x.fused = f;
  }

  // Whether the input can be written where the result is planned (write_ahead): the input, one
  // kernel's result p read by nothing after the copy (nor through a static view), has no other
  // value's bytes where the result is planned from p to the copy, and no elision keeps them.
  bool writable_ahead(size_t c, uint32_t& p) const {
    const Instruction& x = ins_[c];
    const int64_t xi = id(x.args[0]), yi = id(x.args.back());
    if (!plain_pair(xi, yi)) return false;
    if (writers_[(size_t)xi].size() != 1 || writers_[(size_t)yi].size() != 1 || writers_[(size_t)yi][0] != c)
      return false;
    p = writers_[(size_t)xi][0];
    // (a kernel: a delegate may hold its outputs' addresses from its load)
    if (p >= c || ins_[p].kind != Instruction::Kernel || ins_[p].fused || ins_[p].fused_away ||
        !only_out(ins_[p], x.args[0]))
      return false;
    for (int64_t a : aliases_)
      if (alias_base_[(size_t)a] == xi) return false;
    std::vector<int64_t> family = {xi};  // (the input and its et_views)
    for (size_t k = 0; k < family.size(); k++) {
      const int64_t f = family[k];
      if (pinned_[(size_t)f] || (k > 0 && !writers_[(size_t)f].empty())) return false;
      for (uint32_t u : uses_[(size_t)f]) {
        if (u < p || u > c) return false;
        const Instruction& y = ins_[u];
        if (y.kind == Instruction::Kernel && y.args.size() == 3 && y.args[0] == &values_[(size_t)f] &&
            viewed_[(size_t)id(y.args[2])] == f)
          family.push_back(id(y.args[2]));
      }
    }
    for (const auto& s : chains_)  // (a fused chain's kernel runs at one end of its span)
      if (s.first <= c && p <= s.second) return false;
    const Range& ry = range_[(size_t)yi];
    for (uint32_t k = p; k <= c; k++) {
      const Instruction& y = ins_[k];
      if (y.fused_away || (y.fused && y.fused->replanned.empty())) return false;
      bool clash = false;
      auto check = [&](const EValue* t) {
        const int64_t ti = id(t);
        if (ti < 0 || t->tag != Tag::Tensor || std::find(family.begin(), family.end(), ti) != family.end()) return;
        if (ti == yi) {
          clash = clash || k != c;
          return;
        }
        for (int64_t r : reach_[(size_t)ti]) clash = clash || range_[(size_t)r].overlaps(ry);
      };
      for (const EValue* a : y.args) {
        check(a);
        if (a->tag == Tag::TensorList || a->tag == Tag::OptTensorList)
          for (int64_t item : a->items)
            if (item >= 0 && (size_t)item < values_.size()) check(&values_[(size_t)item]);
      }
      if (clash) return false;
    }
    for (const Guard& g : guards_)
      if (g.from <= c && p <= g.to)
        for (const Range& r : g.ranges)
          if (r.overlaps(ry)) return false;
    return true;
  }

  // Whether the copy at c moves elements whatever the call: its input's shape and its parameter
  // fixed, and the relabelling test false for them (an expand that broadcasts, a permute of two
  // dims of size > 1) - not worth a call that always declines.
  bool moves_elements(size_t c, const CopyView& k) const {
    const Instruction& x = ins_[c];
    const EValue* param = k.param >= 0 ? x.args[(size_t)k.param] : nullptr;
    if (x.args[0]->tag != Tag::Tensor || x.args[0]->t.dynamism != Dynamism::Static) return false;
    if (param && param->tag == Tag::IntList)
      for (int64_t item : param->items)
        if (item < 0 || (size_t)item >= values_.size() || written_[(size_t)item]) return false;
    KernelContext ctx;
    ctx.values = values_.data();
    ctx.num_values = values_.size();
    EValue* const a[3] = {x.args[0], const_cast<EValue*>(param), x.args.back()};
    Dims s;
    try {
      return !k.same_bytes(ctx, a, s);
    } catch (const std::exception&) {
      return false;  // (the op refuses it: its kernel says so)
    }
  }

  // The input's kernel p runs at the copy instead, writing where the result is planned (the
  // copy then only relabels): what p reads is as it was at p, and nothing in between reads what
  // p writes.
  void sink(size_t c, const CopyView& k, uint32_t p) {
    Instruction& x = ins_[c];
    auto f = call(c, k);
    f->args.push_back(nullptr);
    f->members = {p, (uint32_t)c};
    f->sunk = (int64_t)p;
    f->replanned.push_back({x.args[0], x.args[0]->t.data, x.args[0]->t.capacity});
    std::vector<Range> read;  // (what p reads, now read at c)
    for (const EValue* a : ins_[p].args)
      if (a != x.args[0] && id(a) >= 0)
        for (int64_t r : reach_[(size_t)id(a)]) read.push_back(range_[(size_t)r]);
    guards_.push_back(Guard{p, (uint32_t)c, read});
    ins_[p].fused_away = true;
    x.fused = f;
  }

  // Whether the input's kernel can run at the copy (sink): p is a kernel whose out is the input,
  // read by the copy alone; nothing from p to the copy reads another of p's arguments (an out it
  // may have) or writes any (their values, their bytes wherever they may be); none of p's tensors
  // has bytes where the result is planned.
  bool sinkable(size_t c, uint32_t& p) const {
    const Instruction& x = ins_[c];
    const int64_t xi = id(x.args[0]), yi = id(x.args.back());
    if (!plain_pair(xi, yi) || writers_[(size_t)xi].size() != 1 || writers_[(size_t)yi].size() != 1 ||
        writers_[(size_t)yi][0] != c)
      return false;
    p = writers_[(size_t)xi][0];
    const Instruction& y0 = ins_[p];
    if (p >= c || y0.kind != Instruction::Kernel || y0.fused || y0.fused_away || writes_in_place(y0) ||
        !only_out(y0, x.args[0]))
      return false;
    if (uses_[(size_t)xi] != std::vector<uint32_t>{p, (uint32_t)c}) return false;
    for (int64_t a : aliases_)
      if (alias_base_[(size_t)a] == xi) return false;
    for (const auto& s : chains_)
      if (s.first <= c && p <= s.second) return false;
    std::vector<int64_t> args;  // (p's arguments but the input: values and list items)
    for (const EValue* a : y0.args) {
      if (id(a) < 0 || a == x.args[0]) continue;
      args.push_back(id(a));
      if (a->tag == Tag::IntList || a->tag == Tag::TensorList || a->tag == Tag::OptTensorList)
        for (int64_t item : a->items)
          if (item >= 0 && (size_t)item < values_.size()) args.push_back(item);
    }
    const Range& ry = range_[(size_t)yi];
    for (int64_t a : args)
      for (int64_t r : reach_[(size_t)a])
        if (range_[(size_t)r].overlaps(ry)) return false;
    for (uint32_t k = p + 1; k < c; k++) {
      const Instruction& y = ins_[k];
      if (y.fused_away || (y.fused && y.fused->replanned.empty())) return false;
      for (int64_t a : args)  // (an argument p may write - an out of p's - is read by nothing here)
        if (values_[(size_t)a].tag == Tag::Tensor && !made_before(a, p) &&
            std::binary_search(uses_[(size_t)a].begin(), uses_[(size_t)a].end(), k))
          return false;
      for (const EValue* w : written_by(y)) {
        const int64_t wi = id(w), wr = root_[(size_t)wi];
        for (int64_t a : args) {
          if (wi == a) return false;
          if (w->tag != Tag::Tensor || values_[(size_t)a].tag != Tag::Tensor) continue;
          for (int64_t r : reach_[(size_t)a])
            if (wr == r || range_[(size_t)wr].overlaps(range_[(size_t)r])) return false;
        }
      }
    }
    return true;
  }

  // Whether kernel y names v only as its out (its last arguments: the out and the result), never
  // as an input it reads.
  static bool only_out(const Instruction& y, const EValue* v) {
    size_t k = y.args.size();
    while (k > 0 && y.args[k - 1] == v) k--;
    if (k == y.args.size()) return false;
    return std::find(y.args.begin(), y.args.begin() + (std::ptrdiff_t)k, v) == y.args.begin() + (std::ptrdiff_t)k;
  }

  // Whether value a is surely an input of instruction p: a constant, a method input or state, or
  // written before p.
  bool made_before(int64_t a, uint32_t p) const {
    const EValue& v = values_[(size_t)a];
    if (v.tag == Tag::Tensor && v.t.is_constant) return true;
    if (writers_[(size_t)a].empty()) return sources_[(size_t)a];
    return writers_[(size_t)a].front() < p;
  }

  // The copy's input and result: plain planned tensors of one dtype in the default dim order, not
  // kept past the call, the input's bytes its own (not a view), no larger than the result's.
  bool plain_pair(int64_t xi, int64_t yi) const {
    if (xi < 0 || yi < 0 || xi == yi) return false;
    const EValue &xv = values_[(size_t)xi], &yv = values_[(size_t)yi];
    if (xv.tag != Tag::Tensor || yv.tag != Tag::Tensor || xv.t.dtype != yv.t.dtype) return false;
    for (const EValue* v : {&xv, &yv})
      if (v->t.is_constant || !v->t.data || !v->t.default_dim_order()) return false;
    return !pinned_[(size_t)xi] && !pinned_[(size_t)yi] && !kept_[(size_t)xi] && root_[(size_t)xi] == xi &&
           xv.t.capacity <= yv.t.capacity;
  }

  int64_t id(const EValue* v) const {
    const int64_t k = v - values_.data();
    return k >= 0 && (size_t)k < values_.size() ? k : -1;
  }
  void use(const EValue* v, size_t i) {
    const int64_t k = id(v);
    if (k < 0) return;
    std::vector<uint32_t>& u = uses_[(size_t)k];
    if (u.empty() || u.back() != i) u.push_back((uint32_t)i);
  }
  // What x may write: a kernel's out (the last argument), every argument of an op that writes in
  // place, a delegate's outputs (where it does not say which: every argument).
  std::vector<const EValue*> written_by(const Instruction& x) const {
    std::vector<const EValue*> w;
    auto add = [&](const EValue* v) {
      if (id(v) < 0) return;
      w.push_back(v);
      if (v->tag == Tag::TensorList || v->tag == Tag::OptTensorList)
        for (int64_t item : v->items)
          if (item >= 0 && (size_t)item < values_.size()) w.push_back(&values_[(size_t)item]);
    };
    if (x.kind == Instruction::Kernel) {
      if (std::strcmp(x.op, "executorch_prim::et_view.default") == 0) return w;  // (metadata only)
      if (writes_in_place(x))
        for (const EValue* a : x.args) add(a);
      else if (!x.args.empty())
        add(x.args.back());
    } else if (x.kind == Instruction::Free) {
      for (const EValue* a : x.args) add(a);
    } else if (x.kind == Instruction::Delegate) {
      std::vector<size_t> outs;
      if (!x.delegate || !x.delegate->output_args(outs))
        for (size_t k = 0; k < x.args.size(); k++) outs.push_back(k);
      for (size_t k : outs)
        if (k < x.args.size()) add(x.args[k]);
    }
    return w;
  }

  bool elidable(size_t c, std::vector<int64_t>& family, uint32_t& last) const {
    const Instruction& x = ins_[c];
    const int64_t xi = id(x.args[0]), yi = id(x.args.back());
    if (xi < 0 || yi < 0 || xi == yi) return false;
    const EValue &xv = values_[(size_t)xi], &yv = values_[(size_t)yi];
    if (xv.tag != Tag::Tensor || yv.tag != Tag::Tensor || xv.t.dtype != yv.t.dtype) return false;
    if (yv.t.is_constant || !yv.t.data || !yv.t.default_dim_order() || pinned_[(size_t)yi]) return false;
    if (!xv.t.default_dim_order()) return false;  // (its kernel would decline every call)
    if (std::strcmp(x.op, "aten::clone.out") == 0) {  // (a memory format other than none / contiguous / preserve)
      const EValue* mf = x.args[1];
      if (mf->tag != Tag::None && !(mf->tag == Tag::Int && (mf->i == 0 || mf->i == 1))) return false;
    }
    // the result and its views (static views planned on its bytes, et_views): written by the copy
    // only, not kept past the call. Another static view at its bytes reads what a later write
    // leaves there, or is not read after the copy; else its bytes are not known: no elision.
    family = {yi};
    for (int64_t a : aliases_) {
      if (!range_[(size_t)a].overlaps(range_[(size_t)yi])) continue;
      if (alias_base_[(size_t)a] == yi) {
        family.push_back(a);
        continue;
      }
      if (alias_base_[(size_t)a] >= 0 && alias_at_[(size_t)a] > (int64_t)c) continue;
      if (alias_base_[(size_t)a] < 0 || (!uses_[(size_t)a].empty() && uses_[(size_t)a].back() > c)) return false;
    }
    for (size_t k = 0; k < family.size(); k++) {
      const int64_t f = family[k];
      if (pinned_[(size_t)f]) return false;
      for (uint32_t w : writers_[(size_t)f])
        if (w != c) return false;
      for (uint32_t u : uses_[(size_t)f]) {
        const Instruction& y = ins_[u];
        if (y.kind == Instruction::Kernel && y.args.size() == 3 && y.args[0] == &values_[(size_t)f] &&
            viewed_[(size_t)id(y.args[2])] == f)
          family.push_back(id(y.args[2]));
      }
    }
    last = (uint32_t)c;
    for (int64_t f : family)
      for (uint32_t u : uses_[(size_t)f]) last = std::max(last, u);
    if (last == c) return false;  // (never read)
    // from the copy to that last read, nothing writes where the input's bytes may be (its own,
    // or those of what an elided copy made it view), nor into it
    const std::vector<int64_t>& xr = reach_[(size_t)xi];
    for (uint32_t k = (uint32_t)c + 1; k <= last; k++) {
      const Instruction& y = ins_[k];
      if (y.fused || y.fused_away) return false;  // (a chain's kernel runs elsewhere)
      for (const EValue* w : written_by(y)) {
        if (w->tag != Tag::Tensor) continue;
        const int64_t wr = root_[(size_t)id(w)];
        for (int64_t r : xr)
          if (wr == r || range_[(size_t)wr].overlaps(range_[(size_t)r])) return false;
      }
    }
    return true;
  }

  std::vector<Instruction>& ins_;
  std::vector<EValue>& values_;
  const std::vector<bool>& pinned_;
  const std::vector<bool>& sources_;  // per value: a method input or state (read, never an out)
  const std::vector<bool>& written_;  // per value: written by an instruction (an int from sym_size...)
  std::vector<std::vector<uint32_t>> uses_;
  std::vector<std::vector<uint32_t>> writers_;  // per value: the instructions that may write it
  std::vector<int64_t> viewed_;                 // per value: what it is an et_view of (-1: none)
  std::vector<int64_t> alias_base_;  // per static view: the value whose bytes it views (-1: none found)
  std::vector<int64_t> alias_at_;    // and the instruction that writes them
  std::vector<bool> kept_;           // per value: its bytes viewed by an elided copy's result
  std::vector<int64_t> root_;                   // per value: the value whose bytes it has
  std::vector<std::vector<int64_t>> reach_;     // per value: the roots whose bytes it may have
  std::vector<Range> range_;                    // per value: its planned bytes (empty: none)
  std::vector<int64_t> aliases_;                // planned tensors nothing writes (static views)
  struct Guard {  // instructions [from, to] during which an elision needs bytes in these ranges kept
    uint32_t from, to;
    std::vector<Range> ranges;
  };
  std::vector<Guard> guards_;
  std::vector<std::pair<uint32_t, uint32_t>> chains_;  // fused chains' first and last instructions
};

}  // namespace

// ETNP_ELIDE_COPIES=0: every copy runs.
void Method::elide_copies() {
  const char* mode = std::getenv("ETNP_ELIDE_COPIES");
  if (mode && std::strcmp(mode, "0") == 0) return;
  const std::vector<bool> pinned = pinned_values();
  std::vector<bool> sources(values_.size(), false);
  for (int64_t i : inputs_) sources[(size_t)i] = true;
  for (const State& st : state_) sources[(size_t)st.value] = true;
  const std::vector<bool> written = written_values();
  CopyElider(instructions_, values_, pinned, sources, written).run();
}

}  // namespace etnp
