#include "kernels/registry.h"

#include <algorithm>

namespace etnp {

KernelRegistry& KernelRegistry::get() {
  static KernelRegistry r;  // thread-safe initialisation
  return r;
}

KernelRegistry::KernelRegistry() {
  register_elementwise_kernels(*this);
  register_activation_kernels(*this);
  register_linear_kernels(*this);
  register_conv_kernels(*this);
  register_pool_kernels(*this);
  register_norm_kernels(*this);
  register_shape_kernels(*this);
  register_reduce_kernels(*this);
  register_index_kernels(*this);
  register_creation_kernels(*this);
  register_upsample_kernels(*this);
  register_quantized_kernels(*this);
  register_prim_kernels(*this);
  register_custom_kernels(*this);
  register_scalar_kernels(*this);
  register_scatter_kernels(*this);
  register_strided_copy_kernels(*this);
  register_random_kernels(*this);
  register_distance_kernels(*this);
  register_grid_sample_kernels(*this);
  register_backward_kernels(*this);
  register_batch_stats_kernels(*this);
  register_logit_shift_kernels(*this);
  register_quantized_embedding_kernels(*this);
  register_fft_kernels(*this);
  register_llm_kernels(*this);
  std::sort(entries_.begin(), entries_.end(), [](const KernelEntry& a, const KernelEntry& b) { return a.name < b.name; });
}

void KernelRegistry::add(const char* name, KernelFn fn, const char* lib, int min_args) {
  entries_.push_back(KernelEntry{name, fn, lib, min_args});
}

const KernelEntry* KernelRegistry::find(const std::string& name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const KernelEntry& e, const std::string& n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

std::vector<std::string> KernelRegistry::libs() const {
  std::vector<std::string> out;  // in registration order, each once
  for (auto& e : entries_) {
    bool seen = false;
    for (auto& l : out) seen = seen || l == e.lib;
    if (!seen) out.push_back(e.lib);
  }
  return out;
}

}  // namespace etnp
