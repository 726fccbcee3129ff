// Load-time in-place updates of state buffers. ExecuTorch exports an update of a registered buffer
// (a KV cache: `cache[:, :, pos] = v`) functionally: index_put.out(B, indices, values, out=T) makes
// T, a whole copy of B with the new entries, the rest of the method reads T, and a copy_(B, T) at
// the end writes it back. Each call then copies every cache twice (B into T, T back into B) and
// holds a second, private copy of it (T's planned memory). Where it is provably the same, T is made
// an alias of B: index_put writes B in place (its copy of self onto itself is skipped) and copy_
// copies B onto itself (skipped). Applied only to straight-line plans (no jumps or moves), where B
// is a state tensor that nothing but those two instructions mentions and T a tensor of B's dtype,
// shape and layout that is neither a method input nor an output nor written by another kernel.
// The one difference a caller can see: a call that fails between the two instructions leaves the
// new entries in B (a copy_ at the end wrote nothing then) - the next call at that position
// rewrites them.
#include <cstring>

#include "runtime/method.h"

namespace etnp {
namespace {

bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.dim != b.dim || !a.default_dim_order() || !b.default_dim_order()) return false;
  for (int k = 0; k < a.dim; k++)
    if (a.sizes[k] != b.sizes[k]) return false;
  return true;
}

}  // namespace

void Method::update_state_in_place() {
  for (const Instruction& x : instructions_)
    if (x.kind == Instruction::JumpFalse || x.kind == Instruction::Move) return;
  auto is_io = [&](const EValue* e) {
    for (int64_t v : inputs_) if (&values_[(size_t)v] == e) return true;
    for (int64_t v : outputs_) if (&values_[(size_t)v] == e) return true;
    return false;
  };
  // (a list value's items name tensors too: a tensor in a list is mentioned wherever the list is)
  auto refers_to = [&](const EValue* a, const EValue* e) {
    if (a == e) return true;
    for (int64_t item : a->items)
      if (item >= 0 && (size_t)item < values_.size() && &values_[(size_t)item] == e) return true;
    return false;
  };
  auto mentions = [&](const Instruction& y, const EValue* e) {
    for (const EValue* a : y.args)
      if (refers_to(a, e)) return true;
    return false;
  };
  for (const State& st : state_) {
    EValue* b = &values_[(size_t)st.value];
    if (b->tag != Tag::Tensor || b->t.is_constant || b->t.owns_external || !b->t.data || is_io(b)) continue;
    // the one index_put.out of B and the one copy_ of its result back into B, in that order
    size_t put = instructions_.size(), back = instructions_.size();
    bool other = false;
    for (size_t k = 0; k < instructions_.size() && !other; k++) {
      const Instruction& y = instructions_[k];
      if (!mentions(y, b)) continue;
      if (y.kind == Instruction::Kernel && std::strcmp(y.op, "aten::index_put.out") == 0 && y.args.size() >= 5 &&
          y.args[0] == b && put == instructions_.size())
        put = k;
      else if (y.kind == Instruction::Kernel && std::strcmp(y.op, "aten::copy_") == 0 && y.args.size() >= 2 &&
               y.args[0] == b && put < k && back == instructions_.size())
        back = k;
      else
        other = true;
    }
    if (other || put == instructions_.size() || back == instructions_.size()) continue;
    const Instruction& xp = instructions_[put];
    EValue* t = xp.args[4];
    if (instructions_[back].args[1] != t || t == b || t->tag != Tag::Tensor || t->t.is_constant ||
        t->t.owns_external || !t->t.data || is_io(t) || !same_layout(b->t, t->t))
      continue;
    // index_put's other arguments are not B's result, and B's result ends index_put only
    bool ok = true;
    for (size_t k = 1; k < 4 && ok; k++) ok = !refers_to(xp.args[k], t) && !refers_to(xp.args[k], b);
    for (size_t k = 5; k < xp.args.size() && ok; k++) ok = xp.args[k] == t;
    // no other kernel writes T (its out argument: the last, possibly repeated)
    for (size_t k = 0; k < instructions_.size() && ok; k++) {
      const Instruction& y = instructions_[k];
      if (k == put || k == back || !mentions(y, t)) continue;
      ok = y.kind == Instruction::Delegate || (y.kind == Instruction::Kernel && y.args.back() != t);
    }
    if (!ok) continue;
    t->t.data = b->t.data;
    t->t.capacity = b->t.capacity;
  }
}

}  // namespace etnp
