// A convolution of one kernel row over an NCHW input read in place, into NHWC or NCHW (xnn_conv_rows.cpp).
#pragma once
#include "delegates/xnnpack/xnn_graph.h"
#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"

namespace etnp::xnn {

// Conv2d node n (one group, packed weights, output channels a multiple of 8; a 1-D convolution at
// stride 1: kernel height 1 with no vertical padding, or an image one column wide with kernel width 1) on an NCHW input a of N x C x H x W into NHWC Y (N x OH x OW x OC), the
// epilogue's column bias, clamp and residual applied. False, before any work, where it does not apply,
// where the CPU path has no such kernel, or where the GEMM is the cheaper path (wide channels:
// the weights of a block of 8 output channels beyond L1; short rows).
// With `nchw` set, Y is written NCHW instead (N x OC x OH x OW: the tile's channel rows stored as
// they are), then nchw's residual (of Y's layout) added and its unary function applied last.
struct NchwStore {
  const float* res[2] = {nullptr, nullptr};  // Y's layout: added in turn, each sum clamped
  float res_lo[2] = {0, 0}, res_hi[2] = {0, 0};
  int act = 0;  // a unary node type (0: none)
  float act_param = 0;
  float* y2 = nullptr;  // where set: act2 of the final result, laid out as Y
  int act2 = 0;
  float act2_param = 0;
};
bool conv_nchw_rows(KernelContext& ctx, const Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t C,
                    int64_t OH, int64_t OW, const GemmEpilogue& ep, float* Y, int64_t OC, const NchwStore* nchw = nullptr);

// Whether node n (a Conv2d reading an NCHW input, its filter packed; input dims `in` as NCHW) is a
// 1-D convolution conv_nchw_rows can take on this CPU path, as far as load time can tell (its
// shape included: where the GEMM is the cheaper path, conv_nchw_rows declines).
bool nchw_rows_candidate(const Node& n, const std::vector<int64_t>& in);

// A Conv2d that writes NCHW (Node::nchw_output): conv_nchw_rows with its residual and unary
// function where it applies, else step by step - the NHWC convolution into nchw_output, the
// transpose, the residual add, the function.
void conv2d_nchw_output(KernelContext& ctx, Graph& g, Node& n, Scratch& sc);

}  // namespace etnp::xnn
