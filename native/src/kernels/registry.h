// The kernel registry: one table of "namespace::name.overload" -> kernel function.
#pragma once
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/evalue.h"

namespace etnp {

class ThreadPool;

struct KernelContext {
  EValue* values = nullptr;  // the method's value table (list items index it)
  size_t num_values = 0;
  ThreadPool* pool = nullptr;
  const char* op = "";
  const void* user = nullptr;  // per-instruction data (a callback op's CallbackOp)
  struct Profiler* profiler = nullptr;  // set while a profiled call runs (runtime/profiler.h)
};

using KernelFn = void (*)(KernelContext& ctx, EValue** args, size_t nargs);

// Whether an operator's name ("aten::mul.out") is one of names
inline bool op_is_one_of(const char* op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::strcmp(op, n) == 0) return true;
  return false;
}

struct KernelEntry {
  std::string name;
  KernelFn fn;
  const char* lib;  // "portable", "optimized", "quantized", "custom", "prim"
  int min_args;
};

class KernelRegistry {
 public:
  static KernelRegistry& get();
  void add(const char* name, KernelFn fn, const char* lib, int min_args);
  const KernelEntry* find(const std::string& name) const;
  const std::vector<KernelEntry>& entries() const { return entries_; }
  std::vector<std::string> libs() const;

 private:
  KernelRegistry();
  std::vector<KernelEntry> entries_;
};

// Each kernel family registers itself from one of these (called once, in order).
void register_elementwise_kernels(KernelRegistry& r);
void register_activation_kernels(KernelRegistry& r);
void register_linear_kernels(KernelRegistry& r);
void register_conv_kernels(KernelRegistry& r);
void register_pool_kernels(KernelRegistry& r);
void register_norm_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_index_kernels(KernelRegistry& r);
void register_creation_kernels(KernelRegistry& r);
void register_upsample_kernels(KernelRegistry& r);
void register_quantized_kernels(KernelRegistry& r);
void register_prim_kernels(KernelRegistry& r);
void register_custom_kernels(KernelRegistry& r);
void register_scalar_kernels(KernelRegistry& r);
void register_scatter_kernels(KernelRegistry& r);
void register_strided_copy_kernels(KernelRegistry& r);
void register_random_kernels(KernelRegistry& r);
void register_distance_kernels(KernelRegistry& r);
void register_grid_sample_kernels(KernelRegistry& r);
void register_backward_kernels(KernelRegistry& r);
void register_batch_stats_kernels(KernelRegistry& r);
void register_logit_shift_kernels(KernelRegistry& r);
void register_quantized_embedding_kernels(KernelRegistry& r);
void register_fft_kernels(KernelRegistry& r);
void register_llm_kernels(KernelRegistry& r);  // native/src/llm/

}  // namespace etnp
