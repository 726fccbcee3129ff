// Operators implemented by the caller through a C callback (Python's en.register_op).
#pragma once
#include <memory>
#include <string>

#include "etnp.h"
#include "kernels/registry.h"

namespace etnp {

struct CallbackOp {
  std::string name;
  etnp_op_fn fn;
  void* user;
};

void register_callback_op(const std::string& name, etnp_op_fn fn, void* user);
bool unregister_callback_op(const std::string& name);
size_t num_callback_ops();
// The callback registered under NAME now, or null. A loaded method keeps its own reference.
std::shared_ptr<const CallbackOp> find_callback_op(const std::string& name);
// The kernel every callback op runs through; ctx.user is the CallbackOp.
void callback_kernel(KernelContext& ctx, EValue** args, size_t nargs);

void callback_op_resize(etnp_op_call* call, size_t arg, int ndim, const int64_t* sizes);
void callback_op_fail(etnp_op_call* call, const char* message);

}  // namespace etnp
