// 1-D stride-1 convolutions of any kernel length (and dilation) by Winograd's minimal filtering
// F(3, 3): the kernel is cut into pieces of 3 taps (the last one padded with zero taps), and each
// tile of 3 outputs comes from windows of 5 input samples, 3 apart, one per piece: 5 products per
// (piece, input channel, output channel) for 3 outputs where the direct sum takes 9 - a kernel of
// 3 taps takes 1.8x fewer multiply-adds, of 7 1.4x, of 11 1.65x. Because the windows of a tile's
// pieces are the windows of the tiles after it, each window is transformed once and the 5 GEMMs
// read a tile's pieces as one row of P * C adjacent values: [tiles x P * C] x [P * C x OC].
// A dilation d splits the outputs into d interleaved sequences (phases), each an undilated
// convolution of the samples d apart. The transforms' coefficients are small integers (input,
// output) and 1/2, 1/6 (filter, once at load): the results differ from a direct sum by rounding.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/compute/gemm.h"
#include "util/float_buffer.h"
#include "threadpool/threadpool.h"

namespace etnp {

// The 5 transformed filters U[xi], each [P * IC x OC] (P = ceil(taps / 3) pieces; row j * IC + ic:
// piece j's transform of input channel ic), packed for the GEMM, from a filter of `taps` taps
// packed for the direct GEMM (pack_b of [taps * IC x OC], rows (tap, ic)). Empty where `direct`
// holds float16 panels or its shape is not taps * IC rows.
std::vector<PackedB> winograd1d_filters(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps);
// The same as views into `store` (grown where too small: given back, then made anew), for a
// per-call transform into a buffer kept between calls; false where winograd1d_filters would
// return none.
bool winograd1d_filters_into(ThreadPool* pool, const PackedB& direct, int64_t IC, int64_t taps, FloatBuffer& store,
                             std::vector<PackedB>& out);

struct Winograd1dGeom {
  int64_t N, L, C;  // the input: N sequences of L positions of C channels (position-major rows)
  int64_t OL, OC;   // the output likewise (OL = L + pads - dilation * (taps - 1))
  int64_t pad;      // zero samples before the input
  int64_t dilation = 1;
  // the input as N sequences of C channel rows of L (NCL: an NCHW value's rows) instead, each
  // block's positions transposed into a small buffer as the block starts
  bool channel_major = false;
};
// Where given, each block's outputs go to fn instead of Y: rows [o0, o1) of sequence n, as
// o1 - o0 rows of OC floats at `rows` (bias and clamp applied; the residual and rows_done not
// taken), from the thread that computed them (blocks run on several threads at once).
struct Winograd1dSink {
  void (*fn)(void* ctx, int64_t n, int64_t o0, int64_t o1, const float* rows) = nullptr;
  void* ctx = nullptr;
};
// Bands of 3 * dilation outputs covering `out` of them
inline int64_t winograd1d_bands(int64_t out, int64_t dilation) { return (out + 3 * dilation - 1) / (3 * dilation); }

// Y = conv1d(X) (stride 1) with the epilogue of a GEMM writing Y as [N * OL, OC] rows (bias_col,
// the clamp, the fused residual and rows_done over whole output rows; bias_row and accumulate are
// not taken: false, before any work). U: winograd1d_filters'.
bool conv1d_winograd_f32(ThreadPool* pool, const Winograd1dGeom& g, const float* X, const std::vector<PackedB>& U,
                         float* Y, const GemmEpilogue& ep, const Winograd1dSink* sink = nullptr);

// One block's work (winograd1d_impl::bands<S>) per CPU path (the x86 ones in winograd_avx2.cpp /
// winograd_avx512.cpp): x holds the input positions [x0, x1) of the sequence as rows of C (zero
// outside), y and res (null: no residual; rows ep.ldr apart) the outputs from o0 on as rows of OC.
struct Winograd1dBlock {
  const float* x;
  int64_t x0, x1;
  float* y;
  const float* res;
  int64_t o0;
  int64_t b0, b1;   // the bands
  float *v, *mb;    // scratch: 5 x (b1 - b0 + P - 1) x C and 5 x (b1 - b0) x OC floats
  const float* zeros;  // C of them
};
using Winograd1dBands = void (*)(const Winograd1dGeom&, const std::vector<PackedB>&, const GemmEpilogue&,
                                 const Winograd1dBlock&);
#if defined(__x86_64__)
void winograd1d_bands_avx512(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                             const Winograd1dBlock& b);
void winograd1d_bands_avx2(const Winograd1dGeom& g, const std::vector<PackedB>& U, const GemmEpilogue& ep,
                           const Winograd1dBlock& b);
#endif

}  // namespace etnp
