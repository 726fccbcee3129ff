// Which convolutions run by Winograd's F(2x2, 3x3) (kernels/compute/winograd_f32.h), planned at
// load: a float32 3x3 convolution of stride 1 (dilation up to 8, equal on both axes), one group, a
// constant filter packed for the GEMM, enough channels for the GEMMs to run at speed and output
// pixels enough per weight for the transforms' bytes to pay: 2.25x fewer multiply-adds, at 16/9 the
// filter's packed bytes. And a 1-D convolution of stride 1 (one kernel row or column of 3 or more
// taps, dilation up to 16) by F(3, 3) over pieces of 3 taps (kernels/compute/winograd1d_f32.h):
// 1.4-1.8x fewer multiply-adds, at 5/3 the filter's bytes per piece of 3 taps.
#include <cstdlib>
#include <cstring>

#include "delegates/xnnpack/xnn_node_util.h"
#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/compute/winograd1d_f32.h"
#include "kernels/compute/winograd_f32.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

namespace {

// Below these the GEMMs of the transformed tiles are too narrow to beat the direct kernel
constexpr int64_t kMinInputChannels = 8, kMinOutputChannels = 16;
// Output pixels (each transformed filter element is used once per tile): a small map wastes a
// quarter or more of its tiles at the edges (7x7: 16 tiles of 4 for 49 pixels) and holds 16/9 the
// direct filter's bytes for little work. ResNet-50, one core (min of 7 calls, this VM):
// direct 81-84 ms; from 16x16 maps on 76.7-76.9; from 14x14 on 72.5-73.4 (+9 MB of filters); from
// 7x7 on 70-77 (+14 MB more, load 150 -> 215-247 ms)
constexpr int64_t kMinPixels = 196;
// Dilated 3x3 convolutions (DeepLab's atrous stages) tile each of the d x d interleaved grids
// of their output; a larger d leaves too few tiles per grid
constexpr int64_t kMaxDilation = 8;

// What both Winograd paths need of a node: one float32 direct packing of its filter (not a static-int8
// one, not float16 panels, not the depthwise layout), nothing fused before or after it, an input
// the graph holds
bool one_float_packing(const Graph& g, const Node& n) {
  return n.qconv.empty() && n.packed.size() == 1 && !n.packed[0].data.empty() && n.packed[0].half.empty() &&
         !n.filter_taps_major && !n.pre && !n.post && !n.inputs.empty() && n.inputs[0] < g.values.size();
}

bool worth_it(const Graph& g, const Node& n) {
  if (!winograd_geometry(n) || !one_float_packing(g, n) || n.nchw_output != kInvalidId) return false;
  const int64_t IC = n.group_in, OC = n.group_out;
  if (IC < kMinInputChannels || OC < kMinOutputChannels || n.packed[0].K != 9 * IC || n.packed[0].N != OC)
    return false;
  const std::vector<int64_t>& dims = g.values[n.inputs[0]].dims;  // NHWC (or NCHW under a fused transpose)
  if (dims.size() != 4) return false;
  const bool nchw = n.nchw_transposed != kInvalidId;
  const int64_t H = nchw ? dims[2] : dims[1], W = nchw ? dims[3] : dims[2];
  if (H <= 0 || W <= 0 || H > (int64_t(1) << 24) || W > (int64_t(1) << 24)) return false;  // (no overflow below)
  const int64_t d = n.dh, OH = H + n.pad_top + n.pad_bottom - 2 * d, OW = W + n.pad_left + n.pad_right - 2 * d;
  if (OH > (int64_t(1) << 24) || OW > (int64_t(1) << 24)) return false;
  // (dilated: tiles in bands of 2d rows and columns; at most half of the computed outputs wasted)
  return OH > 0 && OW > 0 && OH * OW >= kMinPixels &&
         2 * OH * OW >= winograd_bands(OH, d) * winograd_bands(OW, d) * 4 * d * d;
}

// 1-D: outputs per sequence from which the transformed filters are kept from the load on (5 *
// ceil(taps / 3) rows of IC against the direct packing's taps rows: 1.67-2.1x its bytes, for the
// products they save once per output); from kMinOutputsPerCall1d on they are made at each call
// from the direct packing instead (into a buffer kept between calls: one node's at a time), which
// streams them once more than the GEMMs do - a vocoder's first stage, 256 channels on 400 frames
// with kernels of 3, 7 and 11 taps, would hold 30 MB more filters for it
constexpr int64_t kMinOutputs1d = 512, kMinOutputsPerCall1d = 128;
constexpr int64_t kMaxDilation1d = 16;
constexpr int64_t kMinChannelProduct1d = 24;

// 0: not worth it; 1: by filters transformed at each call; 2: by filters transformed at load
int worth_it_1d(const Graph& g, const Node& n) {
  const int64_t k = winograd1d_taps(n);
  if (!k || !one_float_packing(g, n) || n.filter_kh || n.filter_kw) return 0;
  // (an NCHW result - a transpose after it fused - is written block by block from an NCHW input
  // read in place: xnn_conv_rows.cpp)
  if (n.nchw_output != kInvalidId && n.nchw_transposed == kInvalidId) return 0;
  const int64_t IC = n.group_in, OC = n.group_out;
  // The transforms cost per output in proportion to IC + OC, the products they save IC * OC: with
  // few channels the direct kernels (a 1-D convolution's row tile, xnn_conv_rows.cpp, at the FMA
  // peak, its residual adds and functions applied in registers) stay ahead. One core, this VM:
  // 128 -> 128 channels 1.3-1.5x faster, 80 -> 384 1.35x, 512 -> 512 1.3x, 64 -> 64 1.1-1.4x; 32 ->
  // 32 1.2-1.3x alone but 0.9-0.95x in a vocoder (LeakyReLU and residual adds fused after it).
  if (IC * OC < kMinChannelProduct1d * (IC + OC) || n.packed[0].K != k * IC || n.packed[0].N != OC) return 0;
  const std::vector<int64_t>& dims = g.values[n.inputs[0]].dims;  // NHWC (or NCHW under a fused transpose)
  if (dims.size() != 4) return 0;
  const bool nchw = n.nchw_transposed != kInvalidId, along_h = n.kw == 1;
  const int64_t H = nchw ? dims[2] : dims[1], W = nchw ? dims[3] : dims[2];
  const int64_t L = along_h ? H : W, d = along_h ? n.dh : n.dw;
  if ((along_h ? W : H) != 1 || L <= 0 || L > (int64_t(1) << 24)) return 0;
  const int64_t OL = L + (along_h ? n.pad_top + n.pad_bottom : n.pad_left + n.pad_right) - d * (k - 1);
  // (at most half of the computed outputs wasted: tiles of 3 per phase in bands of 3d)
  if (2 * OL < winograd1d_bands(OL, d) * 3 * d) return 0;
  return OL >= kMinOutputs1d ? 2 : OL >= kMinOutputsPerCall1d ? 1 : 0;
}

}  // namespace

int64_t winograd1d_taps(const Node& n) {
  if (n.type != Conv2d || n.groups != 1 || n.sh != 1 || n.sw != 1) return 0;
  const bool along_h = n.kw == 1 && n.kh >= 3 && !n.pad_left && !n.pad_right;
  const bool along_w = n.kh == 1 && n.kw >= 3 && !n.pad_top && !n.pad_bottom;
  if (!along_h && !along_w) return 0;
  const int64_t k = along_h ? n.kh : n.kw, d = along_h ? n.dh : n.dw;
  if (d < 1 || d > kMaxDilation1d) return 0;
  // products per output: k directly, 5 * ceil(k / 3) / 3 by the pieces: at least 1.4x fewer
  return 3 * k >= 7 * ((k + 2) / 3) ? k : 0;
}

void run_winograd1d(KernelContext& ctx, const Node& n, const float* X, bool nchw, int64_t N, int64_t H, int64_t W,
                    int64_t C, int64_t OH, int64_t OW, float* Y, const GemmEpilogue& ep, const Winograd1dSink* sink) {
  const bool along_h = n.kw == 1;
  if (C != n.group_in) fail(n, "input has " + std::to_string(C) + " channels, expected " + std::to_string(n.group_in));
  if ((along_h ? W : H) != 1 || (along_h ? OW : OH) != 1)
    fail(n, "1-D convolution planned for an input one pixel wide, got " + std::to_string(H) + "x" + std::to_string(W));
  const Winograd1dGeom wg{N, along_h ? H : W, C, along_h ? OH : OW, n.group_out, along_h ? n.pad_top : n.pad_left,
                          along_h ? n.dh : n.dw, nchw};
  const std::vector<PackedB>* u = &n.packed;
  if (n.packed.size() == 1) {  // the direct packing: transformed now
    ETNP_THREAD_LOCAL(FloatBuffer, store);  // the 5 filters one after another, grows only (one node's at a time)
    ETNP_THREAD_LOCAL(std::vector<PackedB>, per_call);  // views into it
    if (!winograd1d_filters_into(ctx.pool, n.packed[0], n.group_in, winograd1d_taps(n), store, per_call))
      fail(n, "Winograd filters do not match the convolution");
    u = &per_call;
  }
  if (!conv1d_winograd_f32(ctx.pool, wg, X, *u, Y, ep, sink))
    fail(n, "Winograd filters do not match the convolution");  // (before any work: a chain too)
}

bool winograd_geometry(const Node& n) {
  return n.type == Conv2d && n.groups == 1 && n.kh == 3 && n.kw == 3 && n.sh == 1 && n.sw == 1 && n.dh == n.dw &&
         n.dh >= 1 && n.dh <= kMaxDilation;
}

bool winograd_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("ETNP_WINOGRAD");
    return !(v && std::strcmp(v, "off") == 0);
  }();
  return on;
}

void plan_winograd(ThreadPool* pool, Graph& g) {
  if (!winograd_enabled()) return;
  for (Node& n : g.nodes) {
    if (worth_it(g, n)) {
      std::vector<PackedB> u = winograd_filters_3x3(pool, n.packed[0], n.group_in);
      if (u.size() != 16) continue;
      n.packed = std::move(u);
      n.winograd = true;
    } else if (const int how = worth_it_1d(g, n)) {
      if (how == 1) {  // (the direct packing kept: transformed at each call)
        n.winograd1d = true;
        continue;
      }
      std::vector<PackedB> u = winograd1d_filters(pool, n.packed[0], n.group_in, winograd1d_taps(n));
      if (u.size() != 5) continue;
      n.packed = std::move(u);
      n.winograd1d = true;
    }
  }
}

}  // namespace etnp::xnn
