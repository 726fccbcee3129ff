// The out-tensor contract every kernel checks before it writes: the dtype the op's schema fixes
// for its out (exactly, as the reference kernels check it) and the shape the op produces,
// resized within the out's planned memory. A violation is a clean ExecutionError; nothing is
// written. Byte-copying kernels (view, squeeze, index_select...) rely on it: after
// prepare_out, out holds exactly numel(shape) elements of dtype `want`.
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evalue.h"
#include "kernels/registry.h"

namespace etnp {

inline void check_out_dtype(const KernelContext& ctx, const Tensor& out, DType want, const char* role = "out") {
  if (out.dtype != want)
    throw_exec(std::string(ctx.op && *ctx.op ? ctx.op : "kernel") + ": " + role + " tensor has dtype " +
               dtype_name(out.dtype) + ", the op produces " + dtype_name(want));
}

inline void prepare_out(const KernelContext& ctx, Tensor& out, DType want, const std::vector<int64_t>& shape,
                        const char* role = "out");
// (the same for n sizes at `sizes`: no vector)
inline void prepare_out(const KernelContext& ctx, Tensor& out, DType want, const int64_t* sizes, int n,
                        const char* role = "out") {
  check_out_dtype(ctx, out, want, role);
  resize_tensor(out, n, sizes);
  if (out.numel() > 0 && (!out.data || out.nbytes() > out.capacity))
    throw_exec(std::string(ctx.op && *ctx.op ? ctx.op : "kernel") + ": " + role + " tensor of shape " + out.shape_str() +
               " has no memory of its size");
}
inline void prepare_out(const KernelContext& ctx, Tensor& out, DType want, const std::vector<int64_t>& shape,
                        const char* role) {
  prepare_out(ctx, out, want, shape.data(), (int)shape.size(), role);
}

}  // namespace etnp
