// Load-time folding of layout copies of constants: a program exported without a delegate
// permutes each linear layer's weight on every call (permute_copy(weight) -> addmm). Such a
// copy depends only on constant data, so it is computed once, at method load, into storage of
// its own, and the instruction becomes a no-op. Applied only where it is provably the same:
// straight-line plans (no jumps or moves), a copy op whose only tensor input is a constant,
// and an output read by nothing but known matrix ops (never written again, never returned).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/method.h"
#include "runtime/runtime.h"

namespace etnp {
namespace {

// Pure layout copies: (self, <non-tensor arguments>, out).
bool foldable_copy(const char* op) {
  return op_is_one_of(op, {"aten::permute_copy.out", "aten::t_copy.out", "aten::transpose_copy.int_out",
                        "dim_order_ops::_to_dim_order_copy.out", "dim_order_ops::_clone_dim_order.out",
                        "aten::clone.out", "aten::_to_copy.out"});
}

// Ops whose arguments other than their out tensor (the last, possibly repeated) are only read.
bool reads_all_but_last(const char* op) {
  return op_is_one_of(op, {"aten::addmm.out", "aten::mm.out", "aten::bmm.out", "aten::linear.out", "aten::matmul.out",
                        "aten::baddbmm.out"});
}

}  // namespace

void Method::fold_constant_copies() {
  for (const Instruction& x : instructions_)
    if (x.kind == Instruction::JumpFalse || x.kind == Instruction::Move) return;
  for (size_t i = 0; i < instructions_.size(); i++) {
    Instruction& x = instructions_[i];
    if (x.kind != Instruction::Kernel || !foldable_copy(x.op) || x.args.size() < 2) continue;
    EValue* in = x.args.front();
    EValue* out = x.args.back();
    if (in->tag != Tag::Tensor || !in->t.is_constant || out->tag != Tag::Tensor || out->t.is_constant) continue;
    // the out tensor may be repeated at the end (a .out variant's return value)
    bool other_tensors = false;
    for (size_t k = 1; k + 1 < x.args.size(); k++)
      other_tensors = other_tensors || (x.args[k]->tag == Tag::Tensor && x.args[k] != out);
    if (other_tensors) continue;
    if (is_io(out)) continue;
    bool safe = true;  // every other use of `out` is a read by a known op
    for (size_t j = 0; j < instructions_.size() && safe; j++) {
      if (j == i) continue;
      const Instruction& y = instructions_[j];
      for (size_t k = 0; k < y.args.size() && safe; k++) {
        if (y.args[k] != out) continue;
        safe = y.kind == Instruction::Kernel && reads_all_but_last(y.op) && y.args.back() != out;
      }
    }
    if (!safe) continue;
    size_t bytes = out->t.capacity;
    void* mem = std::malloc(bytes + 64);
    if (!mem) continue;
    uint8_t* data = (uint8_t*)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    void* planned = out->t.data;
    out->t.data = data;
    KernelContext ctx;
    ctx.pool = &prog_->runtime().pool();
    ctx.values = values_.data();
    ctx.num_values = values_.size();
    ctx.op = x.op;
    ctx.user = x.user;
    try {
      check_tensor_args(x);
      x.fn(ctx, x.args.data(), x.args.size());
    } catch (...) {  // leave it to run (and report) at call time
      out->t.data = planned;
      std::free(mem);
      continue;
    }
    folded_.emplace_back((uint8_t*)mem);
    folded_bytes_ += bytes;
    x.kind = Instruction::Free;  // a no-op from now on
    // A constant that nothing else reads is not needed any more: its program bytes are given back
    // (whole pages; read back, checked, if another method needs them - Program::release).
    bool sole = true;
    for (size_t j = 0; j < instructions_.size() && sole; j++)
      for (const EValue* a : instructions_[j].args) sole = sole && (j == i || a != in);
    for (const EValue& v : values_) {
      sole = sole && (&v == in || v.tag != Tag::Tensor || v.t.data != in->t.data);
      for (int64_t item : v.items) sole = sole && (item < 0 || &values_[(size_t)item] != in);  // (in a list)
    }
    sole = sole && !is_io(in);
    if (sole) {
      const Span s{(const uint8_t*)in->t.data, std::max(in->t.capacity, in->t.nbytes())};
      prog_->unprotect(s);
      prog_->release(s);
    }
  }
}

}  // namespace etnp
