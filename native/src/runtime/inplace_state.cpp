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
#include <vector>

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
  const size_t nv = values_.size(), ni = instructions_.size();
  auto index_of = [&](const EValue* e) { return (size_t)(e - values_.data()); };
  // One pass over the plan (linear in its size, whatever it holds): the tensors some list names
  // (left alone: a list is read, or written, wherever it is an argument) and the instructions that
  // name each value directly.
  std::vector<uint8_t> in_list(nv, 0);
  for (const EValue& v : values_)
    for (int64_t item : v.items)
      if (item >= 0 && (size_t)item < nv) in_list[(size_t)item] = 1;
  std::vector<std::vector<uint32_t>> users(nv);
  for (size_t k = 0; k < ni; k++)
    for (const EValue* a : instructions_[k].args) {
      std::vector<uint32_t>& u = users[index_of(a)];
      if (u.empty() || u.back() != (uint32_t)k) u.push_back((uint32_t)k);
    }
  for (const State& st : state_) {
    const size_t vb = (size_t)st.value;
    EValue* b = &values_[vb];
    if (b->tag != Tag::Tensor || b->t.is_constant || b->t.owns_external || !b->t.data || is_io(b) || in_list[vb])
      continue;
    // B named by exactly two instructions: index_put.out(B, ...) and, after it, copy_(B, T)
    const std::vector<uint32_t>& ub = users[vb];
    if (ub.size() != 2) continue;
    const Instruction &xp = instructions_[ub[0]], &xb = instructions_[ub[1]];
    if (xp.kind != Instruction::Kernel || std::strcmp(xp.op, "aten::index_put.out") != 0 || xp.args.size() < 5 ||
        xp.args[0] != b || xb.kind != Instruction::Kernel || std::strcmp(xb.op, "aten::copy_") != 0 ||
        xb.args.size() < 2 || xb.args[0] != b)
      continue;
    EValue* t = xp.args[4];
    const size_t vt = index_of(t);
    if (xb.args[1] != t || t == b || t->tag != Tag::Tensor || t->t.is_constant || t->t.owns_external || !t->t.data ||
        is_io(t) || in_list[vt] || !same_layout(b->t, t->t))
      continue;
    // index_put's indices, values and flag are neither B nor T; its arguments past out repeat T
    bool ok = true;
    for (size_t k = 1; k < 4 && ok; k++) ok = xp.args[k] != t && xp.args[k] != b;
    for (size_t k = 5; k < xp.args.size() && ok; k++) ok = xp.args[k] == t;
    // no other kernel writes T (its out argument: the last, possibly repeated); delegates read it
    for (uint32_t k : users[vt]) {
      if (!ok) break;
      if (k == ub[0] || k == ub[1]) continue;
      const Instruction& y = instructions_[k];
      ok = y.kind == Instruction::Delegate || (y.kind == Instruction::Kernel && y.args.back() != t);
    }
    if (!ok) continue;
    t->t.data = b->t.data;
    t->t.capacity = b->t.capacity;
  }
}

}  // namespace etnp
