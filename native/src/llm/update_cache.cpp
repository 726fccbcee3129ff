// llama::update_cache.out and llama::update_cache_with_indices.out (ExecuTorch's extension/llm
// custom ops): write a [B, S, H, D] value into a [B, max_seq, H, D] cache in place.
//   update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out)
//     rows start_pos .. start_pos + S - 1 (must lie inside the cache)
//   update_cache_with_indices.out(Tensor value, Tensor(a!) cache, SymInt start_pos, Tensor indices,
//                                 *, Tensor(b!) out)
//     row s of batch b goes to cache row indices[b, s]; start_pos is not used
// Any dtype (quantised caches update their int8 values, scales and zero points the same way).
// `out` is a placeholder nobody reads; like ExecuTorch's kernel this leaves it untouched.
#include "kernels/kernel_util.h"
#include "llm/kv_cache.h"
#include "llm/llm_kernels.h"

namespace etnp {
namespace llm {

void update_cache_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& value = tensor_arg(a, 0);
  Tensor& cache = tensor_arg(a, 1);
  int64_t start_pos = int_arg(a, 2);
  check_cache_write(ctx, value, cache, start_pos, "value", "cache");
  write_cache_rows(value, cache, start_pos);
}

void update_cache_with_indices_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& value = tensor_arg(a, 0);
  Tensor& cache = tensor_arg(a, 1);
  // shapes and dtypes as update_cache; the rows' positions come from indices
  check_cache_write(ctx, value, cache, 0, "value", "cache");
  write_cache_rows_at(ctx, value, cache, tensor_arg(a, 3));
}

}  // namespace llm
}  // namespace etnp
