// Fused LLM op chains (fused_chains.h): the chains' float operations, in their order.
#include "kernels/ops/fused_chains.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/compute/row_sums.h"
#include "kernels/compute/vec_math.h"
#include "kernels/kernel_util.h"
#include "os/thread_slot.h"

namespace etnp {

namespace {
// (as the interpreter checks an instruction's tensors: memory for the current shape)
bool plain_f32(const EValue* v) {
  return v->tag == Tag::Tensor && v->t.dtype == DType::F32 && v->t.default_dim_order() &&
         (v->t.numel() == 0 || (v->t.data && v->t.nbytes() <= v->t.capacity));
}
// An out tensor planned where an input's data was (the input read for the last time by the chain)
// is written element by element at the input's own positions by these kernels: the same memory
// is fine, a shifted overlap is not (the chain's instructions then run).
bool disjoint_or_same(const Tensor& out, const Tensor& in) {
  const uint8_t *o = (const uint8_t*)out.data, *i = (const uint8_t*)in.data;
  if (!o || !i || o == i) return true;
  return o + out.nbytes() <= i || i + in.nbytes() <= o;
}
// out's shape to `like`'s, where out is float32 in the default order with room for it
bool ready_out(EValue* out, const Tensor& like) {
  if (out->tag != Tag::Tensor || out->t.dtype != DType::F32 || !out->t.default_dim_order()) return false;
  if (out->t.dim != like.dim || (size_t)like.numel() * sizeof(float) > out->t.capacity) return false;
  if (!std::equal(like.sizes, like.sizes + like.dim, out->t.sizes)) {
    if (out->t.dynamism == Dynamism::Static) return false;
    resize_tensor(out->t, like.dim, like.sizes);
  }
  return out->t.numel() == 0 || out->t.data;
}
}  // namespace

bool fused_rms_norm(KernelContext& ctx, EValue* const* a) {
  if (!plain_f32(a[0]) || !plain_f32(a[1]) || !plain_f32(a[2])) return false;
  const Tensor &x = a[0]->t, &eps_t = a[1]->t, &w = a[2]->t;
  if (x.dim < 1 || eps_t.numel() != 1 || w.dim != 1) return false;
  const int64_t D = x.sizes[x.dim - 1];
  if (w.sizes[0] != D || D <= 0) return false;
  if (!ready_out(a[3], x) || !disjoint_or_same(a[3]->t, x) || !disjoint_or_same(a[3]->t, w)) return false;
  const float* X = x.ptr<float>();
  const float* W = w.ptr<float>();
  float* Y = a[3]->t.ptr<float>();
  const float eps = *eps_t.ptr<float>();
  parallel(ctx, x.numel() / D, std::max<int64_t>(1, 4096 / D), [&](int64_t b, int64_t e) {
    constexpr int64_t kRows = 8;  // rows at a time (row_sums_sequential_f32: side by side)
    ETNP_THREAD_LOCAL(std::vector<float>, sq);  // (not out: it may be x's memory - see disjoint_or_same)
    sq.resize((size_t)(kRows * D));
    for (int64_t r0 = b; r0 < e; r0 += kRows) {
      const int64_t n = std::min(kRows, e - r0);
      // mean(x * x): the squares rounded to float (mul.out, stored: no multiply-add contracted),
      // summed as mean.out sums them (row_sums_sequential_f32) and divided by (float)D; + eps and
      // 1 / sqrt in double as add.out and rsqrt.out
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < D; j++) sq[(size_t)(i * D + j)] = X[(r0 + i) * D + j] * X[(r0 + i) * D + j];
      float acc[kRows];
      row_sums_sequential_f32(sq.data(), n, D, D, acc);
      for (int64_t i = 0; i < n; i++) {
        const float* xr = X + (r0 + i) * D;
        float* yr = Y + (r0 + i) * D;
        const float mean = acc[i] / (float)D;
        const float shifted = (float)((double)mean + (double)eps);
        const float rs = (float)(1.0 / std::sqrt((double)shifted));
        for (int64_t j = 0; j < D; j++) {
          const float nx = xr[j] * rs;
          yr[j] = nx * W[j];
        }
      }
    }
  });
  return true;
}

bool fused_swiglu(KernelContext& ctx, EValue* const* a) {
  if (!plain_f32(a[0]) || !plain_f32(a[1])) return false;
  const Tensor &g = a[0]->t, &u = a[1]->t;
  if (g.dim != u.dim || !std::equal(g.sizes, g.sizes + g.dim, u.sizes)) return false;
  if (!ready_out(a[2], g) || !disjoint_or_same(a[2]->t, g) || !disjoint_or_same(a[2]->t, u)) return false;
  const float* G = g.ptr<float>();
  const float* U = u.ptr<float>();
  float* Y = a[2]->t.ptr<float>();
  // (blocks of 512: vec_sigmoid's results do not depend on where a range starts - sigmoid.out's
  // own ranges are the thread pool's)
  parallel(ctx, g.numel(), 1 << 14, [&](int64_t b, int64_t e) {
    float sg[512];
    for (int64_t i = b; i < e; i += 512) {
      const int64_t n = std::min<int64_t>(512, e - i);
      vec_sigmoid(G + i, sg, n);
      for (int64_t j = 0; j < n; j++) {
        const float silu = G[i + j] * sg[j];
        Y[i + j] = silu * U[i + j];
      }
    }
  });
  return true;
}

bool fused_rope_pairs(KernelContext& ctx, EValue* const* a) {
  if (!plain_f32(a[0]) || !plain_f32(a[1]) || !plain_f32(a[2])) return false;
  const Tensor &x = a[0]->t, &c = a[1]->t, &s = a[2]->t;
  const int k = x.dim - 1;  // x[..., 0]'s rank
  if (k < 1 || x.sizes[k] != 2 || c.dim != s.dim || c.dim > k || !std::equal(c.sizes, c.sizes + c.dim, s.sizes))
    return false;
  const int64_t P = x.sizes[k - 1];
  if (c.sizes[c.dim - 1] != P) return false;
  // c's element offset for each of x[..., 0]'s dims (right-aligned, 0 where c broadcasts)
  int64_t cstride[kMaxDims] = {};
  for (int d = 0; d < k; d++) {
    const int cd = d - (k - c.dim);
    if (cd < 0) continue;
    if (c.sizes[cd] != x.sizes[d] && c.sizes[cd] != 1) return false;
    cstride[d] = c.sizes[cd] == 1 ? 0 : c.strides[cd];
  }
  if (!ready_out(a[3], x) || !disjoint_or_same(a[3]->t, x) || !disjoint_or_same(a[3]->t, c) ||
      !disjoint_or_same(a[3]->t, s))
    return false;
  const float* X = x.ptr<float>();
  const float* C = c.ptr<float>();
  const float* S = s.ptr<float>();
  float* Y = a[3]->t.ptr<float>();
  const int64_t rows = P ? x.numel() / (2 * P) : 0;
  parallel(ctx, rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(1, P)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      int64_t off = 0, rest = r;  // (the row's c offset: its index over x's dims before P)
      for (int d = k - 2; d >= 0; d--) {
        off += (rest % x.sizes[d]) * cstride[d];
        rest /= x.sizes[d];
      }
      const float* xr = X + r * 2 * P;
      const float *cr = C + off, *sr = S + off;
      float* yr = Y + r * 2 * P;
      for (int64_t j = 0; j < P; j++) {
        const float x0 = xr[2 * j], x1 = xr[2 * j + 1];
        // (each product rounded on its own, as the chain's multiplies: no contraction into FMAs)
        const float x0c = x0 * cr[j];
        const float x1s = x1 * sr[j];
        const float x0s = x0 * sr[j];
        const float x1c = x1 * cr[j];
        yr[2 * j] = x0c - x1s;
        yr[2 * j + 1] = x0s + x1c;
      }
    }
  });
  return true;
}

}  // namespace etnp
