// One-row float32 GEMM read straight from an unpacked, row-major B: c = a * B (+ epilogue), for
// the M = 1 products whose B changes every call (attention's bmm / mm over a KV cache at a decode
// step), where packing B first would read and write it twice more than the product reads it.
#pragma once
#include <cstdint>

#include "kernels/compute/gemm.h"

namespace etnp {

// C[n] = epilogue(sum_k A[k] * B[k * rsb + n]) for n < N: the same FMA sequence per element (k = 0,
// 1, ... from zero) and the same epilogue as sgemm's AVX-512 tiles, so the results are
// bit-identical to sgemm's. Returns false, computing nothing, where this CPU path does not take it
// (no AVX-512F, or an epilogue with a fused residual): the caller then runs sgemm.
bool sgemv_rowmajor(ThreadPool* pool, int64_t N, int64_t K, const float* A, const float* B, int64_t rsb, float* C,
                    const GemmEpilogue& ep);

}  // namespace etnp
