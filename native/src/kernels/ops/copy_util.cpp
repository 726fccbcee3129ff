#include "kernels/ops/copy_util.h"

#include "kernels/compute/transpose_f32.h"

namespace etnp {

View view_of(const Tensor& t) {
  View v;
  v.dtype = t.dtype;
  v.data = t.data;
  v.dim = t.dim;
  for (int i = 0; i < t.dim; i++) { v.sizes[i] = t.sizes[i]; v.strides[i] = t.strides[i]; }
  v.offset = 0;
  return v;
}

namespace {
// n elements of one size, strided on both sides; each goes through a register, so overlapping
// source and destination (a hostile memory plan) give wrong data but no undefined behaviour.
template <typename T>
void copy_strided(uint8_t* dp, int64_t dstride, const uint8_t* sp, int64_t sstride, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    T v;
    std::memcpy(&v, sp + j * sstride * (int64_t)sizeof(T), sizeof(T));
    std::memcpy(dp + j * dstride * (int64_t)sizeof(T), &v, sizeof(T));
  }
}
}  // namespace

namespace {
void copy_view_impl(const View& src, Tensor& dst, int64_t dst_off, const int64_t* ds) {
  int nd = src.dim;
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= src.sizes[i];
  if (n == 0) return;
  bool same = src.dtype == dst.dtype;
  size_t es = dtype_size(dst.dtype);
  // Innermost run: contiguous in both -> memcpy rows; dense in both -> one memmove.
  int64_t inner = nd ? src.sizes[nd - 1] : 1;
  bool row = same && nd && src.strides[nd - 1] == 1 && ds[nd - 1] == 1;
  if (row) {
    bool dense = true;
    for (int64_t d = nd - 1, want = 1; d >= 0 && dense; want *= src.sizes[d], d--)
      dense = src.sizes[d] == 1 || (src.strides[d] == want && ds[d] == want);
    if (dense) {
      std::memmove((uint8_t*)dst.data + dst_off * (int64_t)es, (const uint8_t*)src.data + src.offset * (int64_t)es,
                   (size_t)(n * (int64_t)es));
      return;
    }
  }
  // 4-byte elements whose last two dims are swapped (a batch of matrix transposes: attention's
  // K^T): blocked 2-D transposes, not a strided read per element
  if (same && es == 4 && nd >= 2 && src.strides[nd - 2] == 1 && ds[nd - 1] == 1 && src.strides[nd - 1] != 1) {
    const int64_t R = src.sizes[nd - 2], C = src.sizes[nd - 1];
    const float* sp = (const float*)src.data;
    float* dp = (float*)dst.data;
    int64_t idx[kMaxDims] = {};
    for (int64_t s = 0, steps = n / (R * C); s < steps; s++) {
      int64_t so = src.offset, dof = dst_off;
      for (int d = 0; d < nd - 2; d++) { so += idx[d] * src.strides[d]; dof += idx[d] * ds[d]; }
      transpose_strided_f32(sp + so, C, R, src.strides[nd - 1], dp + dof, ds[nd - 2]);
      for (int d = nd - 3; d >= 0; d--) {
        if (++idx[d] < src.sizes[d]) break;
        idx[d] = 0;
      }
    }
    return;
  }
  // same dtype, strided innermost dim (a permute): typed strided runs instead of one memmove each
  bool strided = same && nd && !row && (es == 1 || es == 2 || es == 4 || es == 8);
  if (strided) {
    const int64_t ss = src.strides[nd - 1], dsl = ds[nd - 1];
    const uint8_t* sp = (const uint8_t*)src.data;
    uint8_t* dp = (uint8_t*)dst.data;
    int64_t idx[kMaxDims] = {};
    for (int64_t s = 0, steps = n / inner; s < steps; s++) {
      int64_t so = src.offset, dof = dst_off;
      for (int d = 0; d < nd - 1; d++) { so += idx[d] * src.strides[d]; dof += idx[d] * ds[d]; }
      uint8_t* d0 = dp + dof * (int64_t)es;
      const uint8_t* s0 = sp + so * (int64_t)es;
      switch (es) {
        case 1: copy_strided<uint8_t>(d0, dsl, s0, ss, inner); break;
        case 2: copy_strided<uint16_t>(d0, dsl, s0, ss, inner); break;
        case 4: copy_strided<uint32_t>(d0, dsl, s0, ss, inner); break;
        default: copy_strided<uint64_t>(d0, dsl, s0, ss, inner); break;
      }
      for (int d = nd - 2; d >= 0; d--) {
        if (++idx[d] < src.sizes[d]) break;
        idx[d] = 0;
      }
    }
    return;
  }
  int64_t idx[kMaxDims] = {};
  int outer_dims = row ? nd - 1 : nd;
  int64_t steps = row ? n / inner : n;
  const uint8_t* sp = (const uint8_t*)src.data;
  uint8_t* dp = (uint8_t*)dst.data;
  for (int64_t s = 0; s < steps; s++) {
    int64_t so = src.offset, dof = dst_off;
    for (int d = 0; d < outer_dims; d++) { so += idx[d] * src.strides[d]; dof += idx[d] * ds[d]; }
    if (row) std::memmove(dp + dof * es, sp + so * es, inner * es);
    else if (same) std::memmove(dp + dof * es, sp + so * es, es);
    else if (is_floating(dst.dtype) || is_floating(src.dtype)) store_f64(dp, dst.dtype, dof, load_f64(sp, src.dtype, so));
    else store_i64(dp, dst.dtype, dof, load_i64(sp, src.dtype, so));
    for (int d = outer_dims - 1; d >= 0; d--) {
      if (++idx[d] < src.sizes[d]) break;
      idx[d] = 0;
    }
  }
}
}  // namespace

void copy_view(const View& src, Tensor& dst, int64_t dst_off, const int64_t* dst_strides) {
  const int64_t* ds = dst_strides ? dst_strides : dst.strides;
  // dims of size 1 dropped, and a dim merged into the one before it where both sides step over
  // it as one (an expand's or a slice's rows that are contiguous: one copy, not one per row)
  View v = src;
  int64_t vds[kMaxDims];
  int m = 0;
  for (int i = 0; i < src.dim; i++) {
    if (src.sizes[i] == 1) continue;
    if (m > 0 && v.strides[m - 1] == src.sizes[i] * src.strides[i] && vds[m - 1] == src.sizes[i] * ds[i]) {
      v.sizes[m - 1] *= src.sizes[i];
      v.strides[m - 1] = src.strides[i];
      vds[m - 1] = ds[i];
    } else {
      v.sizes[m] = src.sizes[i];
      v.strides[m] = src.strides[i];
      vds[m] = ds[i];
      m++;
    }
  }
  v.dim = m;
  copy_view_impl(v, dst, dst_off, vds);
}

}  // namespace etnp
