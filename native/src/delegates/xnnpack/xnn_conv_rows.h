// A convolution of one kernel row over an NCHW input read in place (xnn_conv_rows.cpp).
#pragma once
#include "delegates/xnnpack/xnn_graph.h"
#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"

namespace etnp::xnn {

// Conv2d node n (one group, packed weights, output channels a multiple of 8; a 1-D convolution at
// stride 1: kernel height 1 with no vertical padding, or an image one column wide with kernel width 1) on an NCHW input a of N x C x H x W into NHWC Y (N x OH x OW x OC), the
// epilogue's column bias, clamp and residual applied. False, before any work, where it does not apply
// (or the CPU path has no such kernel).
bool conv_nchw_rows(KernelContext& ctx, const Node& n, const Value& a, int64_t N, int64_t H, int64_t W, int64_t C,
                    int64_t OH, int64_t OW, const GemmEpilogue& ep, float* Y, int64_t OC);

}  // namespace etnp::xnn
