// Kernels of ExecuTorch's LLM custom ops (the "llama" namespace of extension/llm/custom_ops).
#pragma once
#include <cstddef>

#include "kernels/registry.h"

namespace etnp {
namespace llm {

void custom_sdpa_kernel(KernelContext& ctx, EValue** a, size_t n);
void sdpa_with_kv_cache_kernel(KernelContext& ctx, EValue** a, size_t n);
void update_cache_kernel(KernelContext& ctx, EValue** a, size_t n);
void update_cache_with_indices_kernel(KernelContext& ctx, EValue** a, size_t n);

}  // namespace llm
}  // namespace etnp
