// Load-time consistency checks of a method's instructions (structurally invalid programs are
// rejected with a ProgramLoadError naming the value, instead of running on stale memory):
// - a kernel call lists its out tensors again as return values: those must be the same values
//   (a return "re-declared" as another value would be read by later instructions without ever
//   being written);
// - a MoveCall moves between values of the same kind, and for tensors the same dtype and rank.
#include <string>

#include "core/error.h"
#include "kernels/callback_ops.h"
#include "runtime/method.h"

namespace etnp {

namespace {
std::string describe(const EValue& v) {
  if (v.tag != Tag::Tensor) return tag_name(v.tag);
  return std::string(dtype_name(v.t.dtype)) + " tensor of rank " + std::to_string(v.t.dim);
}
}  // namespace

void Method::check_plan_consistency() const {
  auto index = [&](const EValue* v) { return std::to_string(v - values_.data()); };
  for (size_t pc = 0; pc < instructions_.size(); pc++) {
    const Instruction& x = instructions_[pc];
    std::string where = "instruction " + std::to_string(pc);
    if (x.kind == Instruction::Kernel && x.fn != &callback_kernel) {
      const KernelEntry* ke = KernelRegistry::get().find(x.op);
      size_t n = x.args.size(), k = ke && (size_t)ke->min_args < n ? n - (size_t)ke->min_args : 0;
      if (k == 0 || 2 * k > n) continue;
      for (size_t j = 0; j < k; j++) {
        const EValue *out = x.args[n - 2 * k + j], *ret = x.args[n - k + j];
        if (out == ret || out->tag != Tag::Tensor || ret->tag != Tag::Tensor) continue;  // (lists: not compared)
        throw_load(where + " (" + x.op + "): return value " + index(ret) + " (" + describe(*ret) +
                   ") is not the out value " + index(out) + " (" + describe(*out) + ") it repeats");
      }
    } else if (x.kind == Instruction::Move) {
      const EValue &from = values_[x.a], &to = values_[x.b];
      bool same = from.tag == to.tag &&
                  (from.tag != Tag::Tensor || (from.t.dtype == to.t.dtype && from.t.dim == to.t.dim));
      if (!same)
        throw_load(where + ": MoveCall moves value " + std::to_string(x.a) + " (" + describe(from) + ") into value " +
                   std::to_string(x.b) + " declared as " + describe(to));
    }
  }
}

}  // namespace etnp
