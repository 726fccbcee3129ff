// Which convolutions run by Winograd's F(2x2, 3x3) (kernels/compute/winograd_f32.h), planned at
// load: a float32 3x3 convolution of stride 1 (dilation up to 8, equal on both axes), one group, a
// constant filter packed for the GEMM, enough channels for the GEMMs to run at speed and output
// pixels enough per weight for the transforms' bytes to pay: 2.25x fewer multiply-adds, at 16/9 the
// filter's packed bytes.
#include <cstdlib>
#include <cstring>

#include "delegates/xnnpack/xnn_ops.h"
#include "kernels/compute/winograd_f32.h"

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

bool worth_it(const Graph& g, const Node& n) {
  if (!winograd_geometry(n) || !n.qconv.empty() || n.packed.size() != 1 || n.packed[0].data.empty() ||
      !n.packed[0].half.empty() || n.filter_taps_major || n.nchw_output != kInvalidId || n.pre || n.post ||
      n.inputs.empty() || n.inputs[0] >= g.values.size())
    return false;
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

}  // namespace

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
    if (!worth_it(g, n)) continue;
    std::vector<PackedB> u = winograd_filters_3x3(pool, n.packed[0], n.group_in);
    if (u.size() != 16) continue;
    n.packed = std::move(u);
    n.winograd = true;
  }
}

}  // namespace etnp::xnn
