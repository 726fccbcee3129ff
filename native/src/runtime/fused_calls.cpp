// Finding the op chains one fused kernel does (runtime/fused_calls.h) in a loaded method.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "kernels/ops/fused_chains.h"
#include "runtime/method.h"

namespace etnp {

bool writes_in_place(const Instruction& x) {
  return x.kind == Instruction::Kernel &&
         op_is_one_of(x.op, {"aten::copy_", "aten::index_put_", "llama::update_cache.out",
                             "llama::update_cache_with_indices.out", "llama::sdpa_with_kv_cache.out"});
}

namespace {

bool is_op(const Instruction& x, const char* op, size_t nargs) {
  return x.kind == Instruction::Kernel && x.args.size() == nargs && std::strcmp(x.op, op) == 0;
}

using Range = ByteRange;

class ChainFinder {
 public:
  ChainFinder(std::vector<Instruction>& ins, std::vector<EValue>& values, const std::vector<bool>& written,
              const std::vector<bool>& pinned)
      : ins_(ins), values_(values), written_(written), pinned_(pinned), uses_(values.size()),
        producer_(values.size(), -1), claimed_(ins.size(), false), runs_at_(ins.size()), range_(values.size()),
        root_(values.size(), nullptr), known_(values.size(), false) {
    for (size_t i = 0; i < ins.size(); i++) runs_at_[i] = (uint32_t)i;
    for (size_t i = 0; i < ins.size(); i++) {
      const Instruction& x = ins[i];
      auto use = [&](const EValue* v) {
        const int64_t k = id(v);
        if (k < 0) return;
        std::vector<uint32_t>& u = uses_[(size_t)k];
        if (u.empty() || u.back() != i) u.push_back((uint32_t)i);
      };
      for (const EValue* a : x.args) {
        use(a);
        for (int64_t item : a->items)
          if (item >= 0 && (size_t)item < values_.size() && a->tag != Tag::IntList) use(&values_[(size_t)item]);
      }
      if (x.kind == Instruction::Kernel && !x.args.empty() && id(x.args.back()) >= 0)
        producer_[(size_t)id(x.args.back())] = (int32_t)i;
      if (x.kind == Instruction::Delegate) {  // (its outputs; where it does not say, every argument)
        std::vector<size_t> outs;
        if (!x.delegate || !x.delegate->output_args(outs))
          for (size_t k = 0; k < x.args.size(); k++) outs.push_back(k);
        for (size_t k : outs)
          if (k < x.args.size() && id(x.args[k]) >= 0) producer_[(size_t)id(x.args[k])] = (int32_t)i;
      }
    }
    for (size_t v = 0; v < values.size(); v++)  // (a view: the memory of what it views)
      known_[v] = memory_of(&values_[v], range_[v], &root_[v]);
    // A planned tensor no instruction writes shares the bytes of one that is (a static view the
    // program plans onto its base): its reads count as its base's - the value written last, before
    // its first read, over all its bytes. Where there is none, its bytes may be anyone's: no chain
    // may touch them (unplaced_).
    for (size_t v = 0; v < values.size(); v++) {
      if (!alias(v) || uses_[v].empty()) continue;
      int64_t base = -1;
      for (int64_t k = (int64_t)uses_[v].front() - 1; k >= 0 && base < 0; k--)
        for (const EValue* a : ins_[(size_t)k].args) {
          const int64_t b = id(a);
          if (b < 0 || producer_[(size_t)b] != k || !known_[(size_t)b]) continue;
          if (range_[(size_t)b].lo <= range_[v].lo && range_[v].hi <= range_[(size_t)b].hi) base = b;
        }
      if (base < 0) {
        unplaced_.push_back(range_[v]);
        continue;
      }
      for (uint32_t u : uses_[v]) uses_[(size_t)base].push_back(u);
      std::sort(uses_[(size_t)base].begin(), uses_[(size_t)base].end());
      uses_[(size_t)base].erase(std::unique(uses_[(size_t)base].begin(), uses_[(size_t)base].end()), uses_[(size_t)base].end());
    }
  }

  // Finds the chains and attaches the fused calls; returns how many. Every chain found is taken,
  // at its last instruction, first; then each that is not safe so given the others moves to its
  // first instruction, or where not safe there either, is put back (its instructions run as they
  // are, which may change what is safe for another), until all that stay are safe.
  int run() {
    struct Found {
      std::shared_ptr<FusedCall> f;
      std::vector<const EValue*> inner;
      int place = 0;  // 0: at its last instruction, 1: at its first, 2: not fused
    };
    std::vector<Found> found;
    for (size_t i = 0; i < ins_.size(); i++) {
      Found c;
      if (is_op(ins_[i], "aten::mean.out", 6)) c.f = rms_norm(i, c.inner);
      else if (is_op(ins_[i], "aten::sigmoid.out", 3)) c.f = swiglu(i, c.inner);
      else if (is_op(ins_[i], "aten::cat.out", 4)) c.f = rope(i, c.inner);
      if (!c.f) continue;
      bool reads_inner = false;  // (a kernel input that is one of the chain's own values: never written)
      for (size_t k = 0; k + 1 < c.f->args.size(); k++)
        reads_inner = reads_inner || std::find(c.inner.begin(), c.inner.end(), c.f->args[k]) != c.inner.end();
      if (reads_inner) continue;
      for (uint32_t k : c.f->members) claimed_[k] = true;
      found.push_back(std::move(c));
    }
    auto mark = [&](const Found& c) {
      const uint32_t first = c.f->members.front(), last = c.f->members.back();
      const uint32_t at = c.place == 0 ? last : first;
      for (uint32_t k : c.f->members) {
        ins_[k].fused_away = c.place < 2 && k != at;
        ins_[k].fused = c.place < 2 && k == at ? c.f : nullptr;
        runs_at_[k] = c.place < 2 ? at : k;
      }
    };
    for (const Found& c : found) mark(c);
    for (bool changed = true; changed;) {
      changed = false;
      for (Found& c : found)
        while (c.place < 2 && !safe(*c.f, c.inner, c.place == 1)) {
          c.place++;
          mark(c);
          changed = true;
        }
    }
    int n = 0;
    for (const Found& c : found) n += c.place < 2;
    return n;
  }

 private:
  int64_t id(const EValue* v) const {
    const int64_t k = v - values_.data();
    return k >= 0 && (size_t)k < values_.size() ? k : -1;
  }
  const Instruction* made_by(const EValue* v, const char* op, size_t nargs) const {
    const int64_t k = id(v);
    if (k < 0 || producer_[(size_t)k] < 0) return nullptr;
    const Instruction& x = ins_[(size_t)producer_[(size_t)k]];
    return is_op(x, op, nargs) && !claimed_[(size_t)producer_[(size_t)k]] ? &x : nullptr;
  }
  uint32_t index_of(const Instruction* x) const { return (uint32_t)(x - ins_.data()); }
  // the one instruction other than its producer that names v, if it is OP (NARGS args)
  const Instruction* sole_reader(const EValue* v, const char* op, size_t nargs) const {
    const int64_t k = id(v);
    if (k < 0) return nullptr;
    const Instruction* r = nullptr;
    for (uint32_t u : uses_[(size_t)k]) {
      if ((int32_t)u == producer_[(size_t)k]) continue;
      if (r) return nullptr;
      r = &ins_[u];
    }
    return r && is_op(*r, op, nargs) && !claimed_[index_of(r)] ? r : nullptr;
  }
  static bool f32(const EValue* v) { return v->tag == Tag::Tensor && v->t.dtype == DType::F32; }
  // a value no instruction writes: a constant of the program
  bool const_int(const EValue* v, int64_t want) const {
    const int64_t k = id(v);
    return k >= 0 && !written_[(size_t)k] && v->tag == Tag::Int && v->i == want;
  }
  bool unit_alpha(const EValue* v) const {
    const int64_t k = id(v);
    if (k < 0 || written_[(size_t)k]) return false;
    return (v->tag == Tag::Int && v->i == 1) || (v->tag == Tag::Double && v->d == 1.0);
  }
  // dim names x's last dim (-1 or rank - 1)
  bool last_dim(const EValue* dim, int rank) const { return const_int(dim, -1) || const_int(dim, rank - 1); }
  bool one_last_dim(const EValue* list, int rank) const {
    if (list->tag != Tag::IntList || list->items.size() != 1) return false;
    const int64_t item = list->items[0];
    return item >= 0 && (size_t)item < values_.size() && last_dim(&values_[(size_t)item], rank);
  }
  // the other operand of a two-input op whose inputs are args 0 and 1, if one of them is v
  static const EValue* other(const Instruction& x, const EValue* v) {
    return x.args[0] == v ? x.args[1] : x.args[1] == v ? x.args[0] : nullptr;
  }

  // mean(x * x, [-1], keepdim) + eps -> rsqrt -> x * r -> * w, found from the mean
  std::shared_ptr<FusedCall> rms_norm(size_t i, std::vector<const EValue*>& inner) const {
    const Instruction& mean = ins_[i];
    EValue *sq = mean.args[0], *m = mean.args[4];
    if (mean.args[5] != m || !f32(sq) || !f32(m) || mean.args[3]->tag != Tag::None) return nullptr;
    if (mean.args[2]->tag != Tag::Bool || !mean.args[2]->i || !one_last_dim(mean.args[1], sq->t.dim)) return nullptr;
    const Instruction* p = made_by(sq, "aten::mul.out", 4);
    if (!p || p->args[0] != p->args[1] || !f32(p->args[0])) return nullptr;
    EValue* x = p->args[0];
    const Instruction* add = sole_reader(m, "aten::add.out", 5);
    if (!add || add->args[0] != m || !unit_alpha(add->args[2])) return nullptr;
    EValue *eps = add->args[1], *a = add->args[3];
    if (!f32(eps) || eps->t.numel() != 1 || !f32(a)) return nullptr;
    const Instruction* rs = sole_reader(a, "aten::rsqrt.out", 3);
    if (!rs || rs->args[0] != a || !f32(rs->args[1])) return nullptr;
    EValue* r = rs->args[1];
    const Instruction* scale = sole_reader(r, "aten::mul.out", 4);
    if (!scale || other(*scale, r) != x || !f32(scale->args[2])) return nullptr;
    EValue* y = scale->args[2];
    const Instruction* gain = sole_reader(y, "aten::mul.out", 4);
    const EValue* w = gain ? other(*gain, y) : nullptr;
    if (!w || w == y || !f32(w) || w->t.dim != 1 || !f32(gain->args[2])) return nullptr;
    auto f = std::make_shared<FusedCall>();
    f->fn = &fused_rms_norm;
    f->name = "etnp::fused_rms_norm";
    f->args = {x, eps, const_cast<EValue*>(w), gain->args[2]};
    f->members = {index_of(p), (uint32_t)i, index_of(add), index_of(rs), index_of(scale), index_of(gain)};
    inner = {sq, m, a, r, y};
    return f;
  }

  // g * sigmoid(g) -> * u, found from the sigmoid
  std::shared_ptr<FusedCall> swiglu(size_t i, std::vector<const EValue*>& inner) const {
    const Instruction& sig = ins_[i];
    EValue *g = sig.args[0], *sg = sig.args[1];
    if (sig.args[2] != sg || !f32(g) || !f32(sg)) return nullptr;
    const Instruction* silu = sole_reader(sg, "aten::mul.out", 4);
    if (!silu || other(*silu, sg) != g || !f32(silu->args[2])) return nullptr;
    EValue* m = silu->args[2];
    const Instruction* gate = sole_reader(m, "aten::mul.out", 4);
    const EValue* u = gate ? other(*gate, m) : nullptr;
    if (!u || u == m || !f32(u) || !f32(gate->args[2])) return nullptr;
    auto f = std::make_shared<FusedCall>();
    f->fn = &fused_swiglu;
    f->name = "etnp::fused_swiglu";
    f->args = {g, const_cast<EValue*>(u), gate->args[2]};
    f->members = {(uint32_t)i, index_of(silu), index_of(gate)};
    inner = {sg, m};
    return f;
  }

  // which half of x's pairs v is - 0: squeeze(slice(x, -1, 0, 1), [-1]), 1: (x, -1, 1, 2) -, or -1;
  // its two instructions into at
  int half_of(const EValue* v, const EValue*& x, const Instruction** at) const {
    const Instruction* sq = made_by(v, "aten::squeeze_copy.dims_out", 4);
    if (!sq || !f32(v)) return -1;
    const EValue* sl_out = sq->args[0];
    const Instruction* sl = made_by(sl_out, "aten::slice_copy.Tensor_out", 7);
    if (!sl || !f32(sl_out) || !f32(sl->args[0])) return -1;
    const int rank = sl->args[0]->t.dim;
    if (rank < 2 || sl->args[0]->t.sizes[rank - 1] != 2 || !last_dim(sl->args[1], rank)) return -1;
    if (!one_last_dim(sq->args[1], sl_out->t.dim) || !const_int(sl->args[4], 1)) return -1;
    const int h = const_int(sl->args[2], 0) && const_int(sl->args[3], 1) ? 0
                  : const_int(sl->args[2], 1) && const_int(sl->args[3], 2) ? 1
                                                                          : -1;
    x = sl->args[0];
    at[0] = sl, at[1] = sq;
    return h;
  }
  // m = one half of x's pairs times a factor: the half (-1: neither) and the factor
  int product(const EValue* m, const EValue*& x, const EValue*& factor, const Instruction** at) const {
    const Instruction* mul = made_by(m, "aten::mul.out", 4);
    if (!mul || !f32(m)) return -1;
    for (int k = 0; k < 2; k++) {
      const int h = half_of(mul->args[k], x, at + 1);
      if (h >= 0) {
        factor = mul->args[1 - k];
        at[0] = mul;
        return f32(factor) ? h : -1;
      }
    }
    return -1;
  }

  // cat([unsqueeze(x0 * c - x1 * s, -1), unsqueeze(x0 * s + x1 * c, -1)], -1), x0 / x1 the
  // squeezed slices of x's pairs, found from the cat
  std::shared_ptr<FusedCall> rope(size_t i, std::vector<const EValue*>& inner) const {
    const Instruction& cat = ins_[i];
    const EValue* list = cat.args[0];
    EValue* out = cat.args[2];
    if (cat.args[3] != out || list->tag != Tag::TensorList || list->items.size() != 2 || !f32(out)) return nullptr;
    if (!last_dim(cat.args[1], out->t.dim) || id(list) < 0) return nullptr;
    const EValue* parts[2];
    const Instruction* unsq[2];
    const Instruction* sums[2];
    for (int k = 0; k < 2; k++) {
      const int64_t item = list->items[(size_t)k];
      if (item < 0 || (size_t)item >= values_.size()) return nullptr;
      parts[k] = &values_[(size_t)item];
      unsq[k] = made_by(parts[k], "aten::unsqueeze_copy.out", 4);
      if (!unsq[k] || !f32(parts[k]) || !last_dim(unsq[k]->args[1], parts[k]->t.dim)) return nullptr;
      sums[k] = made_by(unsq[k]->args[0], k == 0 ? "aten::sub.out" : "aten::add.out", 5);
      if (!sums[k] || !unit_alpha(sums[k]->args[2]) || !f32(sums[k]->args[3])) return nullptr;
    }
    // the four products: real = x0 * c - x1 * s, imaginary = x0 * s + x1 * c
    const EValue *x = nullptr, *c = nullptr, *s = nullptr;
    const Instruction* at[4][3];
    const int want_half[4] = {0, 1, 0, 1};
    const EValue* terms[4] = {sums[0]->args[0], sums[0]->args[1], sums[1]->args[0], sums[1]->args[1]};
    const EValue* factors[4];
    for (int k = 0; k < 4; k++) {
      const EValue* xk = nullptr;
      if (product(terms[k], xk, factors[k], at[k]) != want_half[k]) return nullptr;
      if (x && xk != x) return nullptr;
      x = xk;
    }
    c = factors[0], s = factors[1];
    if (factors[2] != s || factors[3] != c || c == s) return nullptr;
    auto f = std::make_shared<FusedCall>();
    f->fn = &fused_rope_pairs;
    f->name = "etnp::fused_rope_pairs";
    f->args = {const_cast<EValue*>(x), const_cast<EValue*>(c), const_cast<EValue*>(s), out};
    std::vector<uint32_t> m = {index_of(sums[0]), index_of(sums[1]), index_of(unsq[0]), index_of(unsq[1]), (uint32_t)i};
    for (int k = 0; k < 4; k++)
      for (const Instruction* y : at[k]) m.push_back(index_of(y));
    std::sort(m.begin(), m.end());
    m.erase(std::unique(m.begin(), m.end()), m.end());  // (each half's slice and squeeze serve two products)
    if (m.back() != i) return nullptr;
    f->members = m;
    for (uint32_t k : m)
      if (k != i) inner.push_back(ins_[k].args.back());
    inner.push_back(list);
    return f;
  }

  // The memory v's data lies in, following views to what they view: false where it is not known
  // at load; an empty range where no planned write can reach it (a constant, a bound input).
  bool memory_of(const EValue* v, Range& r, const EValue** root) const {
    for (int depth = 0; depth < 16; depth++) {
      const Instruction* view = made_by(v, "executorch_prim::et_view.default", 3);
      if (!view) break;
      v = view->args[0];
    }
    *root = v;
    r = Range{};
    if (v->tag != Tag::Tensor) return true;
    if (v->t.is_constant) return true;
    if (!v->t.data) return is_pinned(v);  // (an input bound at call time: not planned memory)
    r.lo = (const uint8_t*)v->t.data;
    r.hi = r.lo + std::max(v->t.capacity, v->t.nbytes());
    return true;
  }
  bool is_pinned(const EValue* v) const { return id(v) < 0 || pinned_[(size_t)id(v)]; }
  // A planned tensor no instruction writes: memory it shares with another value (a static view the
  // program plans onto its base's bytes), written when that is.
  bool alias(size_t v) const {
    const EValue& e = values_[v];
    return e.tag == Tag::Tensor && !e.t.is_constant && !pinned_[v] && !written_[v] && producer_[v] < 0 && e.t.data;
  }
  // Whether bytes in r as they are just before instruction `at` runs (where instructions run: a
  // fused chain's at its place) are read at or after it, by a value other than `own`: one kept
  // past the call, one written before `at` and read from it on, or a static view read from it on.
  bool needed_from(const Range& r, uint32_t at, const std::vector<const EValue*>& own) const {
    for (size_t v = 0; v < values_.size(); v++) {
      if (!known_[v] || !range_[v].overlaps(r)) continue;
      if (std::find(own.begin(), own.end(), &values_[v]) != own.end()) continue;
      if (pinned_[v]) return true;
      if (producer_[v] >= 0 && runs_at_[(size_t)producer_[v]] >= at) continue;  // (written anew by then)
      for (uint32_t u : uses_[v])
        if (runs_at_[u] >= at && (int32_t)u != producer_[v]) return true;
    }
    return false;
  }
  bool unplaced(const Range& r) const {
    for (const Range& u : unplaced_)
      if (u.overlaps(r)) return true;
    return false;
  }

  // Whether the chain can run at its last instruction (early false) or its first (early true),
  // given where the other chains run: the values in between are the chain's own, and what runs
  // between its first and last instruction leaves what the chain reads and writes alone.
  //  - At the last: the inputs must still be there, so nothing between may write over them (a
  //    value planned where an input was after its last read); and nothing between may leave a
  //    value that is still needed where the intermediates are (written there where the kernel
  //    declines and the chain's instructions run).
  //  - At the first (its inputs all made before it): the result and the intermediates are written
  //    early, so nothing between may touch their memory (a value there meanwhile).
  //  - Either way, nothing between writes into an input in place.
  bool safe(const FusedCall& f, const std::vector<const EValue*>& inner, bool early) const {
    const std::vector<uint32_t>& members = f.members;  // (in order)
    auto member = [&](uint32_t k) { return std::binary_search(members.begin(), members.end(), k); };
    for (const EValue* v : inner) {
      if (is_pinned(v) || (v->tag == Tag::Tensor && v->t.is_constant)) return false;
      for (uint32_t u : uses_[(size_t)id(v)])
        if (!member(u)) return false;
    }
    enum Kind { Input, Inner, Result };
    struct Guard {
      Range r;
      const EValue* root;
      Kind kind;
    };
    std::vector<Guard> guards;
    for (size_t k = 0; k < f.args.size(); k++) {
      const bool result = k + 1 == f.args.size();
      if (result && !early) continue;  // (written where the chain's last instruction writes it)
      const int64_t a = id(f.args[k]);
      if (a < 0 || !known_[(size_t)a]) return false;
      Guard g{range_[(size_t)a], root_[(size_t)a], result ? Result : Input};
      if (early && !result && (producer_[(size_t)a] >= (int32_t)members.front() || alias((size_t)a)))
        return false;  // (made before the chain's first instruction)
      guards.push_back(g);
    }
    for (const EValue* v : inner) {
      const int64_t a = id(v);
      if (a < 0 || !known_[(size_t)a] || unplaced(range_[(size_t)a])) return false;
      guards.push_back(Guard{range_[(size_t)a], root_[(size_t)a], Inner});
    }
    std::vector<const EValue*> own(inner);
    own.insert(own.end(), f.args.begin(), f.args.end());
    auto clashes = [&](const Instruction& y, const EValue* t) {
      if (t->tag != Tag::Tensor) return false;
      const int64_t a = id(t);
      if (a < 0 || !known_[(size_t)a]) return true;
      const Range& r = range_[(size_t)a];
      const EValue* root = root_[(size_t)a];
      for (const Guard& g : guards) {
        if (g.kind == Input && root == g.root) {
          if (writes_in_place(y)) return true;  // (reading an input is fine, writing into it is not)
          continue;
        }
        if (!g.r.overlaps(r)) continue;
        if (early ? g.kind != Input : g.kind == Input || needed_from(r, members.back(), own)) return true;
      }
      return false;
    };
    auto touches = [&](const Instruction& y) {
      for (const EValue* a : y.args) {
        if (clashes(y, a)) return true;
        if (a->tag == Tag::TensorList || a->tag == Tag::OptTensorList)
          for (int64_t item : a->items)
            if (item >= 0 && (size_t)item < values_.size() && clashes(y, &values_[(size_t)item])) return true;
      }
      return false;
    };
    for (uint32_t k = members.front() + 1; k < members.back(); k++) {
      if (member(k)) continue;
      const Instruction& y = ins_[k];
      if (y.kind == Instruction::Free || y.fused_away) continue;  // (another chain's: nothing runs there)
      if (y.fused) {  // another chain: its kernel or its instructions run there
        for (uint32_t j : y.fused->members)
          if (touches(ins_[j])) return false;
        continue;
      }
      if (touches(y)) return false;
    }
    // another chain that runs past this one's span but has instructions inside it: where it runs
    // (before the span: it reads and writes there before; after: its members in the span are
    // accounted for where they run)
    return true;
  }

  std::vector<Instruction>& ins_;
  std::vector<EValue>& values_;
  const std::vector<bool>& written_;
  const std::vector<bool>& pinned_;
  std::vector<std::vector<uint32_t>> uses_;
  std::vector<int32_t> producer_;
  std::vector<bool> claimed_;
  std::vector<uint32_t> runs_at_;                // where each instruction runs (a fused chain's last)
  std::vector<Range> range_;                     // per value: its memory (a view's: what it views)
  std::vector<const EValue*> root_;              // per value: the value whose memory that is
  std::vector<bool> known_;                      // (whether range_ is known at load)
  std::vector<Range> unplaced_;                  // static views whose base was not found
};

}  // namespace

namespace {
bool decline(KernelContext&, EValue* const*) { return false; }
}  // namespace

std::vector<bool> Method::pinned_values() const {
  std::vector<bool> pinned(values_.size(), false);
  for (int64_t i : inputs_) pinned[(size_t)i] = true;
  for (int64_t o : outputs_) pinned[(size_t)o] = true;
  for (const State& st : state_) pinned[(size_t)st.value] = true;
  return pinned;
}

// ETNP_FUSE_CHAINS=0: no chain fused; =decline: every fused kernel declines, so each chain's
// instructions run at its last (the tests' way to that path).
void Method::fuse_chains() {
  const char* mode = std::getenv("ETNP_FUSE_CHAINS");
  if (mode && std::strcmp(mode, "0") == 0) return;
  for (const Instruction& x : instructions_)
    if (x.kind == Instruction::JumpFalse || x.kind == Instruction::Move) return;
  const std::vector<bool> pinned = pinned_values();
  const std::vector<bool> written = written_values();
  ChainFinder(instructions_, values_, written, pinned).run();
  if (mode && std::strcmp(mode, "decline") == 0)
    for (Instruction& x : instructions_)
      if (x.fused) {
        auto f = std::make_shared<FusedCall>(*x.fused);
        f->fn = &decline;
        x.fused = f;
      }
}

}  // namespace etnp
