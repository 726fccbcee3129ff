// Compute of the XNNPACK graph's nodes on float32 NHWC values.
#pragma once
#include "delegates/xnnpack/xnn_graph.h"
#include <cstring>
#include <utility>

#include "kernels/kernel_util.h"
#include "kernels/compute/quantize_row.h"
#include "kernels/compute/winograd1d_f32.h"
#include "kernels/registry.h"

namespace etnp::xnn {

struct Scratch {
  std::vector<float> col;  // im2col / temporaries, reused across calls
  std::vector<uint8_t> q8;  // quantized activations (uint8 = int8 + 128) for the int8 GEMM
  std::vector<uint8_t> q8col;  // their unfolded (im2col) rows, when a convolution unfolds them all
  FloatBuffer padded;       // zero-padded convolution input for the indirect GEMM
  FloatBuffer expanded;     // a depthwise input with its channels repeated (channel multiplier > 1)
  std::vector<const float*> conv_rows;
  std::vector<int32_t> conv_koff;
  std::vector<float> row_scale;
  std::vector<int32_t> row_zp;
  std::vector<int64_t> block_start;  // a blocked (qb4w) FullyConnected's rows: where each block's begin in q8
  // buffers moved between values during a call (a reshape taking its input's), undone after it
  std::vector<std::pair<uint32_t, uint32_t>> moves;
};

// A float DepthwiseConv2d of one input channel and a constant filter only it reads (a 1-D front
// end's Conv1d(1, C, k, stride): an STFT, wav2vec2's first layer; a grayscale stem) becomes a
// Conv2d of one group: im2col rows of KH * KW taps on the GEMM, not a per-pixel multiplier loop.
void lower_depthwise_as_conv(Graph& g);
// A float ConvTranspose2d of stride 1 with a constant filter only it reads is a convolution with
// the taps reversed and the padding (KH - 1) * dh - pad (+ the output padding below and right):
// it becomes that Conv2d (xnn_deconv.cpp), on the convolution paths (indirect GEMM, fusions).
void lower_stride1_deconv_as_conv(Graph& g);
// A float Conv2d with a constant filter only it reads, whose outer kernel rows or columns read only
// padding for every output pixel at its input's planned size (a large dilation on a small map:
// DeepLab's ASPP, dilation 36 on 28x28, reads the image with its centre tap alone), becomes the
// convolution of the taps that remain, its padding reduced to match (same output, same sums less
// the products of zeros); xnn_dead_taps.cpp.
void lower_dead_taps(Graph& g);
// Prepare weights of a node whose filter is constant (packing for the GEMM).
void prepare_node(ThreadPool* pool, Graph& g, Node& n);
// The float packing prepare_node left as a placeholder (a static-int8 Conv2d's, made only where
// fusion kept it): made now, from the filter (read back from the program if it was given back).
void pack_deferred(const Program& program, ThreadPool* pool, Graph& g, Node& n);
// At load, once fusion is done: the 3x3 stride-1 float convolutions worth running by Winograd's
// F(2x2, 3x3) get its transformed filters in place of their direct packing (Node::winograd), and
// the 1-D stride-1 ones worth running by F(3, 3) over pieces of 3 taps theirs (Node::winograd1d).
void plan_winograd(ThreadPool* pool, Graph& g);
// A Conv2d of the shape the Winograd path takes (3x3, stride 1, one group, equal dilation up to 8)
bool winograd_geometry(const Node& n);
// A Conv2d of the shape the 1-D Winograd path takes: one group, stride 1, a kernel of one row (or
// one column) whose length saves products (3 and more taps, 4 left out), dilation up to 16 along
// it; its length then, else 0. (The input's other axis must be one pixel wide: checked at load
// and at each call.)
int64_t winograd1d_taps(const Node& n);
// Node n (Node::winograd1d) on input X (N x H x W x C, NHWC, or with `nchw` N x C x H x W; the axis
// across the kernel one pixel wide) into NHWC Y (N x OH x OW x OC) with the epilogue of a GEMM
// writing Y's rows, or (sink) block by block to sink (winograd1d_f32.h); fails (an ExecutionError)
// where the shapes are not the plan's.
void run_winograd1d(KernelContext& ctx, const Node& n, const float* X, bool nchw, int64_t N, int64_t H, int64_t W,
                    int64_t C, int64_t OH, int64_t OW, float* Y, const GemmEpilogue& ep,
                    const Winograd1dSink* sink = nullptr);
// Whether Winograd convolutions are planned (ETNP_WINOGRAD=off: never; read once per process)
bool winograd_enabled();
// Runs one node: computes its output shape and values.
void run_node(KernelContext& ctx, Graph& g, Node& n, Scratch& s);
// Snap a freshly written value to its datatype (fp16 rounding, quantization grid, per-row dynamic
// quantization); with src, v's values are read from there (v.data is written: a copy and its
// snapping in one pass).
void finalize_value(KernelContext& ctx, Value& v, const float* src = nullptr);
// finalize_value for n elements of a value that is not dynamically quantized: d = x as v's
// datatype holds it (x may be d); a copy for float32.
void finalize_range(const Value& v, const float* x, float* d, int64_t n);
// Values on a per-tensor int8 grid (qs8 / qu8), and that grid.
bool on_int8_grid(const Value& v);
Int8Grid grid_of(const Value& v);
// Two values of one datatype and quantization (then one holds exactly the other's possible values).
inline bool same_grid(const Value& a, const Value& b) {
  return a.dtype == b.dtype && a.quant == b.quant && a.scale == b.scale && a.zero_point == b.zero_point;
}
// Dynamically quantized per row (QDINT8): finalize_value computes each row's parameters.
inline bool dynamically_quantized(const Value& v) { return v.quant == Quant::PerToken || v.dtype == QDINT8; }
// memcpy of n floats that is well-defined for n == 0 (empty vectors have null data).
inline void copy_floats(float* dst, const float* src, int64_t n) {
  if (n > 0) std::memcpy(dst, src, (size_t)n * sizeof(float));
}
// copy_floats, large copies across the threads
inline void copy_values(KernelContext& ctx, float* dst, const float* src, int64_t n) {
  parallel(ctx, n, int64_t(1) << 18, [&](int64_t b, int64_t e) { copy_floats(dst + b, src + b, e - b); });
}
// Resize a value's runtime shape and storage.
void ensure_shape(Value& v, const std::vector<int64_t>& shape);
// Output size along one dimension of a convolution/pooling window (fails when empty).
int64_t pool_dim(const Node& n, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1);
// A GEMM/convolution node's bias (prepared or from its third input), or null; checked to cover `channels`.
const float* bias_of(Graph& g, Node& n, int64_t channels);
// The GEMM epilogue of a node: column bias and its output clamp.
GemmEpilogue epilogue(const Node& n, const float* bias);
// Adds a fused residual (see Node::residual) to an epilogue: r's data from `offset`, rows `ldr` apart.
void with_residual(GemmEpilogue& ep, const Node& n, const Value* r, int64_t offset, int64_t ldr);
// A depthwise convolution with pointwise convolutions fused around it (Node::pre, Node::post),
// run in bands of rows (xnn_band_pipeline.cpp); false, having done nothing, when the shapes do
// not allow it.
bool band_pipeline(KernelContext& ctx, Graph& g, Node& n);

}  // namespace etnp::xnn
