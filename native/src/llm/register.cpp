// Registers the LLM custom-op kernels (library "llm") with the kernel registry.
#include "llm/llm_kernels.h"

namespace etnp {

void register_llm_kernels(KernelRegistry& r) {
  const char* L = "llm";
  r.add("llama::custom_sdpa.out", &llm::custom_sdpa_kernel, L, 9);
  r.add("llama::sdpa_with_kv_cache.out", &llm::sdpa_with_kv_cache_kernel, L, 12);
  r.add("llama::update_cache.out", &llm::update_cache_kernel, L, 4);
  r.add("llama::update_cache_with_indices.out", &llm::update_cache_with_indices_kernel, L, 5);
}

}  // namespace etnp
