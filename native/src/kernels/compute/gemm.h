// Packed single-precision GEMM: C[M,N] = A[M,K] * B[K,N] (+ bias) (clamped), with
// arbitrary strides for A and B and the runtime's thread pool. B is packed into 16-column
// panels (once, for weights). Kernels chosen at run time: AVX-512F R x 32 / 2R x 16 tiles
// reading row-major A in place (also indirectly, for convolutions), AVX2+FMA 6x16 tiles,
// portable tiles (gemm_generic.h).
#pragma once
#include <cstdint>
#include <vector>

#include "threadpool/threadpool.h"
#include "util/float_buffer.h"
#include "util/packed_array.h"
#include "util/compiler.h"

namespace etnp {

struct GemmEpilogue {
  const float* bias_row = nullptr;  // bias[m], added to row m
  const float* bias_col = nullptr;  // bias[n], added to column n
  float min = -std::numeric_limits<float>::infinity(), max = std::numeric_limits<float>::infinity();
  bool accumulate = false;          // C += A*B instead of C = A*B
  // then, when set, C(m, n) = clamp(C(m, n) + residual[m * ldr + n], res_min, res_max): an
  // elementwise add fused into the GEMM, applied to each tile while it is in cache
  const float* residual = nullptr;
  int64_t ldr = 0;
  float res_min = -std::numeric_limits<float>::infinity(), res_max = std::numeric_limits<float>::infinity();
  // then, when set, rows_done(rows_ctx, m0, m1) over row ranges that cover [0, M) once each,
  // every call once rows [m0, m1) of C are final in all their columns (from the thread that
  // finished them, right away where its task held whole rows, else in a pass after the GEMM; the
  // calls may run at once on several threads): the work after a GEMM done while its rows are in
  // cache (an elementwise chain after a convolution or a linear layer, xnn_chain.h)
  void (*rows_done)(void* ctx, int64_t m0, int64_t m1) = nullptr;
  void* rows_ctx = nullptr;
};

// B packed into 16-column panels, ready for sgemm_packed (pack weights once, reuse): float32
// panels, or float16 panels of the same layout (a float16 filter's values: half the bytes to
// stream, widened exactly in the kernels, so the products and sums are those of float32 panels).
struct PackedB {
  int64_t K = 0, N = 0;
  PackedArray<float, UninitAllocator<float>> data;     // (a view where a weight cache file holds it)
  PackedArray<uint16_t, UninitAllocator<uint16_t>> half;  // or these (data then empty)
  bool empty() const { return data.empty() && half.empty(); }
};
// half: float16 panels where every value of B is exactly a float16 (else float32 panels).
PackedB pack_b(ThreadPool* pool, int64_t K, int64_t N, const float* B, int64_t rsb, int64_t csb, bool half = false);

// C = A * packed B (+ epilogue).
void sgemm_packed(ThreadPool* pool, int64_t M, const float* A, int64_t rsa, int64_t csa, const PackedB& B, float* C,
                  int64_t ldc, const GemmEpilogue& ep = GemmEpilogue());

// C = A * packed B where A(m, k) = rows[m][koff[k]] (a convolution read straight from its input:
// rows[m] is output pixel m's first tap, koff[k] tap k's offset from it; koff null: A(m, k) =
// rows[m][k], K adjacent floats a row). AVX-512 only: returns
// false, computing nothing, where the CPU path lacks it (the caller then unfolds A itself).
bool sgemm_packed_indirect(ThreadPool* pool, int64_t M, const float* const* rows, const int32_t* koff,
                           const PackedB& B, float* C, int64_t ldc, const GemmEpilogue& ep = GemmEpilogue());

// A(m,k) = A[m*rsa + k*csa]; B(k,n) = B[k*rsb + n*csb]; C(m,n) = C[m*ldc + n].
void sgemm(ThreadPool* pool, int64_t M, int64_t N, int64_t K, const float* A, int64_t rsa, int64_t csa,
           const float* B, int64_t rsb, int64_t csb, float* C, int64_t ldc, const GemmEpilogue& ep = GemmEpilogue());

}  // namespace etnp
