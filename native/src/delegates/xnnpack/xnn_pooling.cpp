// Pooling XNNPACK nodes (NHWC): max/average windows (with argmax indices), global average.
#include "delegates/xnnpack/xnn_node_util.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/compute/code_sums.h"
#include "kernels/compute/column_sums.h"
#include "kernels/compute/row_sums.h"
#include "kernels/kernel_util.h"
#include "kernels/compute/window_reduce.h"
#include "os/thread_slot.h"

namespace etnp::xnn {

// ---- pooling (NHWC) ----
void pool(KernelContext& ctx, Graph& g, Node& n, bool is_max, Value* indices) {
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], H = a.shape[1], W = a.shape[2], C = a.shape[3];
  int64_t OH = pool_dim(n, H, n.kh, n.sh, n.dh, n.pad_top, n.pad_bottom), OW = pool_dim(n, W, n.kw, n.sw, n.dw, n.pad_left, n.pad_right);
  ensure_shape(o, {N, OH, OW, C});
  if (indices) ensure_shape(*indices, {N, OH, OW, C});
  const int64_t row_work = std::max<int64_t>(1, OW * C * n.kh * n.kw);
  // each output pixel: its window's taps reduced channel-wise (kernels/compute/window_reduce.h), float32
  // values or (max pooling of int8 values kept as codes, int8_moves) byte codes
  auto windows = [&](auto* X, auto* Y, auto reduce) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(X)>>;
    parallel(ctx, N * OH, std::max<int64_t>(1, (int64_t(1) << 14) / row_work), [&](int64_t b, int64_t e) {
      ETNP_THREAD_LOCAL(std::vector<const T*>, taps);  // per thread, grow only
      taps.resize((size_t)n.kh * n.kw);
      for (int64_t r = b; r < e; r++) {
        const int64_t bn = r / OH, oh = r % OH;
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t count = 0;
          for (int64_t i = 0; i < (int64_t)n.kh; i++) {
            const int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t j = 0; j < (int64_t)n.kw; j++) {
              const int64_t iw = ow * n.sw - n.pad_left + j * n.dw;
              if (iw >= 0 && iw < W) taps[(size_t)count++] = X + ((bn * H + ih) * W + iw) * C;
            }
          }
          reduce(taps.data(), count, Y + (r * OW + ow) * C);
        }
      }
    });
  };
  if (a.as_codes || o.as_codes) {
    if (!is_max || indices || !int8_moves(g, n)) fail(n, "int8 codes on a pooling that cannot take them");  // (the plan rules it out)
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, in_buf);
    ETNP_THREAD_LOCAL(std::vector<uint8_t>, out_buf);
    int32_t zp;
    const uint8_t* X = value_codes(ctx, n, a, a.numel(), in_buf, zp);
    uint8_t* Y = output_codes(o, out_buf);
    windows(X, Y, [&](const uint8_t* const* t, int64_t count, uint8_t* y) { window_max_u8(t, count, C, y); });
    if (!o.as_codes) codes_to_values(ctx, o, Y);
    n.snapped = true;
    return;
  }
  if (!indices) {
    windows(a.cdata(), o.data.data(), [&](const float* const* t, int64_t count, float* y) {
      if (is_max) window_max(t, count, C, y);
      else window_mean(t, count, C, (float)std::max<int64_t>(count, 1), y);
    });
    return;
  }
  parallel(ctx, N * OH, std::max<int64_t>(1, (int64_t(1) << 14) / row_work), [&](int64_t b, int64_t e) {
    ETNP_THREAD_LOCAL(std::vector<float>, acc);  // per thread, grow only
    ETNP_THREAD_LOCAL(std::vector<int64_t>, cnt_or_idx);
    acc.resize((size_t)C);
    cnt_or_idx.resize((size_t)C);
    for (int64_t r = b; r < e; r++) {
      int64_t bn = r / OH, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ow++) {
        std::fill(acc.begin(), acc.end(), is_max ? -INFINITY : 0.f);
        std::fill(cnt_or_idx.begin(), cnt_or_idx.end(), 0);
        int64_t count = 0;
        for (int64_t i = 0; i < (int64_t)n.kh; i++) {
          int64_t ih = oh * n.sh - n.pad_top + i * n.dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < (int64_t)n.kw; j++) {
            int64_t iw = ow * n.sw - n.pad_left + j * n.dw;
            if (iw < 0 || iw >= W) continue;
            const float* x = &a.data[((bn * H + ih) * W + iw) * C];
            count++;
            if (is_max && indices) {
              for (int64_t c = 0; c < C; c++)
                if (x[c] > acc[c]) { acc[c] = x[c]; cnt_or_idx[c] = i * n.kw + j; }
            } else if (is_max) {
              float* m = acc.data();
              for (int64_t c = 0; c < C; c++) m[c] = x[c] > m[c] ? x[c] : m[c];  // NaN passed over, as above
            } else {
              for (int64_t c = 0; c < C; c++) acc[c] += x[c];
            }
          }
        }
        float* y = &o.data[((bn * OH + oh) * OW + ow) * C];
        for (int64_t c = 0; c < C; c++) y[c] = is_max ? acc[c] : acc[c] / (float)std::max<int64_t>(count, 1);
        if (indices)
          for (int64_t c = 0; c < C; c++) indices->data[((bn * OH + oh) * OW + ow) * C + c] = (float)cnt_or_idx[c];
      }
    }
  });
}
// GlobalAvgPooling2d that absorbed the NCHW -> NHWC transpose before it (xnn_fuse.cpp): each
// channel's pixels are contiguous - the same double sums, in the same parts of kRows pixels
static void global_avg_pool_nchw(KernelContext& ctx, const Value& a, Value& o, int64_t N, int64_t C, int64_t HW) {
  // each channel's HW values are contiguous: summed in double in 8 lanes per part of kRows
  // (kernels/compute/row_sums.h, several channels side by side), parts added in order - as the
  // NHWC path's columns
  constexpr int64_t kRows = 512, kBlock = 64;
  const float* X = a.cdata();
  float* Y = o.data.data();
  const int64_t NC = N * C;
  parallel(ctx, NC, std::max<int64_t>(1, (int64_t(1) << 10) / std::max<int64_t>(HW, 1)), [&](int64_t b, int64_t e) {
    double acc[kBlock], part[kBlock];
    for (int64_t i0 = b; i0 < e; i0 += kBlock) {
      const int64_t m = std::min(kBlock, e - i0);
      for (int64_t r0 = 0; r0 < HW; r0 += kRows) {
        row_sums_f64(X + i0 * HW + r0, m, std::min(HW, r0 + kRows) - r0, HW, part);
        for (int64_t k = 0; k < m; k++) acc[k] = r0 == 0 ? part[k] : acc[k] + part[k];
      }
      for (int64_t k = 0; k < m; k++) Y[i0 + k] = HW ? (float)(acc[k] / (double)HW) : std::nanf("");
    }
  });
}

bool int8_gap(const Graph& g, const Node& n) {
  const size_t nv = g.values.size();
  if (n.type != GlobalAvgPooling2d || n.inputs.size() != 1 || n.inputs[0] >= nv || n.output >= nv ||
      n.inputs[0] == n.output || n.output2 != kInvalidId || n.pre || n.post || n.residual != kInvalidId)
    return false;
  const Value& a = g.values[n.inputs[0]];
  return on_int8_grid(a) && a.scale > 0.f && std::isfinite(a.scale);
}

// GlobalAvgPooling2d of a static-int8 input (int8_gap), its byte codes (kept as codes, or the
// grid points' codes): each channel's exact integer sum of codes (NCHW: a channel's pixels
// contiguous; NHWC: columns) less HW * the code of 0. Onto a static-int8 output as XNNPACK
// computes it - float32(sum) * (input scale / (output scale * HW)), clamped, plus the output's
// zero point, rounded to nearest even: the code's parity breaks ties, not the grid index's (a mean
// of 16 pixels lies on a half step often; measured against the reference runtime) - (true:
// finished), else the mean sum * (scale / HW) in double, which run_node finishes (false).
static bool global_avg_pool_codes(KernelContext& ctx, const Node& n, const Value& a, Value& o, int64_t N, int64_t C,
                                  int64_t HW, bool nchw) {
  ETNP_THREAD_LOCAL(std::vector<uint8_t>, buf);  // (a float32 input's codes)
  int32_t zp;
  const uint8_t* X = value_codes(ctx, n, a, a.numel(), buf, zp);
  const int64_t shift = (int64_t)(zp + 128) * HW;
  const double step = (double)a.scale / (double)HW;
  const bool q8 = on_int8_grid(o) && o.scale > 0.f && std::isfinite(o.scale);
  const Int8Grid grid = q8 ? grid_of(o) : Int8Grid{};
  const float scale = q8 ? a.scale / (o.scale * (float)HW) : 0.f, zpo = (float)o.zero_point;
  float lo = 0.f, hi = 0.f;  // (the clamp in grid units, and the grid's)
  if (q8) {
    QOutput q;
    q.grid = &grid;
    q8_bounds(q, n.out_min, n.out_max, lo, hi);
  }
  float* Y = o.data.data();
  auto finish = [&](const int64_t* sums, int64_t count, float* y) {
    if (q8)
      for (int64_t k = 0; k < count; k++)
        y[k] = (std::nearbyint(std::min(std::max((float)(sums[k] - shift) * scale, lo), hi) + zpo) - zpo) * grid.scale;
    else
      for (int64_t k = 0; k < count; k++) y[k] = (float)((double)(sums[k] - shift) * step);
  };
  constexpr int64_t kBlock = 256;
  if (nchw) {
    parallel(ctx, N * C, std::max<int64_t>(1, (int64_t(1) << 14) / HW), [&](int64_t b, int64_t e) {
      int64_t sums[kBlock];
      for (int64_t i0 = b; i0 < e; i0 += kBlock) {
        const int64_t m = std::min(kBlock, e - i0);
        code_row_sums(X + i0 * HW, m, HW, HW, sums);
        finish(sums, m, Y + i0);
      }
    });
    return q8;
  }
  const int64_t cblocks = (C + kBlock - 1) / kBlock;
  parallel(ctx, N * cblocks, 1, [&](int64_t b, int64_t e) {
    int64_t sums[kBlock];
    for (int64_t t = b; t < e; t++) {
      const int64_t img = t / cblocks, c0 = (t % cblocks) * kBlock, m = std::min(kBlock, C - c0);
      code_column_sums(X + img * HW * C + c0, HW, C, m, sums);
      finish(sums, m, Y + img * C + c0);
    }
  });
  return q8;
}

bool gap_reads_codes(const Node& n) {
  return n.nchw_transposed == kInvalidId || fusion_mode() != FusionMode::Steps;
}

void global_avg_pool(KernelContext& ctx, Graph& g, Node& n) {
  const bool nchw = n.nchw_transposed != kInvalidId;
  if (int8_gap(g, n) && gap_reads_codes(n)) {  // (in steps, the transpose below first: then here)
    Value &a = in(g, n, 0), &o = out(g, n);
    if (a.shape.size() != 4) fail(n, "expects a 4-D input");
    const int64_t N = a.shape[0], C = a.shape[nchw ? 1 : 3], HW = a.shape[nchw ? 2 : 1] * a.shape[nchw ? 3 : 2];
    if (o.dims.size() == 4) ensure_shape(o, {N, 1, 1, C});
    else ensure_shape(o, {N, C});
    if (HW == 0) {  // the mean of nothing (0 / 0), as the float path's
      for (int64_t i = 0; i < N * C; i++) o.data[i] = std::nanf("");
      return;
    }
    n.snapped = global_avg_pool_codes(ctx, n, a, o, N, C, HW, nchw);
    return;
  }
  if (in(g, n, 0).as_codes) fail(n, "int8 codes on a global average pooling that cannot take them");  // (the plan rules it out)
  if (nchw) {
    Value &a = in(g, n, 0), &o = out(g, n);
    if (a.shape.size() != 4) fail(n, "expects a 4-D NCHW input");
    const int64_t N = a.shape[0], C = a.shape[1], HW = a.shape[2] * a.shape[3];
    if (fusion_mode() != FusionMode::Steps) {
      if (o.dims.size() == 4) ensure_shape(o, {N, 1, 1, C});
      else ensure_shape(o, {N, C});
      global_avg_pool_nchw(ctx, a, o, N, C, HW);
      return;
    }
    // step by step (ETNP_XNN_FUSION=steps): the transpose, then the NHWC pooling below
    Value& t = g.values[n.nchw_transposed];
    ensure_shape(t, {N, a.shape[2], a.shape[3], C});
    if (!transpose_as_batched_2d(ctx, a, {0, 2, 3, 1}, t)) fail(n, "cannot transpose the NCHW input");
    Node step = n;
    step.nchw_transposed = kInvalidId;
    step.inputs[0] = n.nchw_transposed;
    return global_avg_pool(ctx, g, step);
  }
  Value &a = in(g, n, 0), &o = out(g, n);
  if (a.shape.size() != 4) fail(n, "expects a 4-D NHWC input");
  int64_t N = a.shape[0], HW = a.shape[1] * a.shape[2], C = a.shape[3];
  if (o.dims.size() == 4) ensure_shape(o, {N, 1, 1, C});
  else ensure_shape(o, {N, C});
  // channel blocks of at most 256 (double accumulators on the stack), at most 64 where that gives
  // the threads several (a 4x4x440 map is one block of rows), multiples of 8
  const int64_t cb_max = C * std::min<int64_t>(HW, 512) >= (int64_t(1) << 13) ? 64 : 256;
  const int64_t even = (C + cb_max - 1) / cb_max, CB = ((C + even - 1) / even + 7) / 8 * 8;
  const int64_t cblocks = (C + CB - 1) / CB;
  if (HW == 0) {  // the mean of nothing (0 / 0), as before; the input may have no storage
    for (int64_t i = 0; i < N * C; i++) o.data[i] = std::nanf("");
    return;
  }
  // tasks: (image, channel block, part of kRows pixels) - a fixed partition of each channel's
  // rows, so the sums (in double, parts added in order) do not depend on the thread count
  constexpr int64_t kRows = 512;
  const int64_t parts = (HW + kRows - 1) / kRows, tasks = N * cblocks * parts;
  ETNP_THREAD_LOCAL(std::vector<double>, partial);
  partial.resize((size_t)(tasks * CB));
  double* P = partial.data();  // (the caller's buffer)
  const float* X = a.cdata();
  parallel(ctx, tasks, std::max<int64_t>(1, (int64_t(1) << 13) / (std::min(HW, kRows) * CB)), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; t++) {
      const int64_t p = t % parts, bc = t / parts, b = bc / cblocks, c0 = (bc % cblocks) * CB, cn = std::min(CB, C - c0);
      const int64_t r0 = p * kRows, rn = std::min(kRows, HW - r0);
      column_sums_f64(X + (b * HW + r0) * C + c0, rn, C, cn, P + t * CB);
    }
  });
  for (int64_t bc = 0; bc < N * cblocks; bc++) {
    const int64_t b = bc / cblocks, c0 = (bc % cblocks) * CB, cn = std::min(CB, C - c0);
    const double* first = P + bc * parts * CB;
    for (int64_t c = 0; c < cn; c++) {
      double acc = first[c];
      for (int64_t p = 1; p < parts; p++) acc += first[p * CB + c];
      o.data[b * C + c0 + c] = (float)(acc / (double)HW);
    }
  }
}

}  // namespace etnp::xnn
