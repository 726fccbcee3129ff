// Fused forms of the op chains an LLM export leaves between its delegates (RMSNorm, SwiGLU, RoPE
// on interleaved pairs), which runtime/fused_calls.cpp finds in a method's instructions. Each
// makes the chain's float operations in the chain's order, so its results are bit for bit the
// instructions' own. Each returns false, writing nothing, where the tensors at hand are not the
// float32, contiguous shapes it handles: the interpreter then runs the chain's instructions.
#pragma once
#include "kernels/registry.h"

namespace etnp {

using FusedFn = bool (*)(KernelContext& ctx, EValue* const* args);

// args: x [..., D], eps (one element), w [D], out. RMSNorm as aten ops spell it:
//   out = (x * rsqrt(mean(x * x, -1, keepdim) + eps)) * w
bool fused_rms_norm(KernelContext& ctx, EValue* const* args);

// args: g, u (one shape), out. SiLU-gated product: out = (g * sigmoid(g)) * u
bool fused_swiglu(KernelContext& ctx, EValue* const* args);

// args: x [..., P, 2] (pairs: real, imaginary), c, s (cos and sin, broadcast to x[..., 0]'s
// shape over its other dims, P their last), out [..., P, 2]. Rotary embedding as ExecuTorch's
// llama (apply_rotary_emb) spells it with slices, squeezes, multiplies and a cat:
//   out[..., 0] = x0 * c - x1 * s;  out[..., 1] = x0 * s + x1 * c
bool fused_rope_pairs(KernelContext& ctx, EValue* const* args);

}  // namespace etnp
