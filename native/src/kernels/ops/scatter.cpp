// Writes into a copy (or, for the in-place ops, into the tensor itself): select_scatter,
// slice_scatter, masked_scatter, masked_select, and the in-place aten::copy_ / aten::index_put_
// that programs with mutable buffers (KV caches, running state) call.
#include <vector>

#include "kernels/ops/copy_util.h"
#include "kernels/ops/index_util.h"

namespace etnp {
namespace {

void check_out_dtype(const Tensor& out, DType want, const char* op) {
  if (out.dtype != want)
    throw_exec(std::string(op) + ": output dtype " + dtype_name(out.dtype) + " does not match the input's " + dtype_name(want));
}
void check_same_dtype(const Tensor& t, DType want, const char* op, const char* what) {
  if (t.dtype != want)
    throw_exec(std::string(op) + ": " + what + " dtype " + dtype_name(t.dtype) + " does not match the input's " + dtype_name(want));
}
// Copies src over the region of dst described by (offset, sizes, strides), which has src's shape.
void write_region(const Tensor& src, Tensor& dst, int64_t offset, const int64_t* strides) {
  copy_view(view_of(src), dst, offset, strides);
}

// select_scatter.out(self, src, dim, index, out)
void select_scatter_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &src = tensor_arg(a, 1);
  if (x.dim == 0) throw_exec("select_scatter: input must have at least one dim");
  int d = (int)wrap_dim(int_arg(a, 2), x.dim);
  int64_t n = x.sizes[d], idx = int_arg(a, 3);
  if (idx < -n || idx >= n) throw_exec("select_scatter: index " + std::to_string(idx) + " is out of range for size " + std::to_string(n));
  if (idx < 0) idx += n;
  Tensor& out = tensor_arg(a, 4);
  check_out_dtype(out, x.dtype, "select_scatter");
  check_same_dtype(src, x.dtype, "select_scatter", "src");
  if (src.dim != x.dim - 1) throw_exec("select_scatter: src " + src.shape_str() + " must have the selected slice's shape");
  for (int k = 0, j = 0; k < x.dim; k++)
    if (k != d && src.sizes[j++] != x.sizes[k]) throw_exec("select_scatter: src " + src.shape_str() + " does not match the slice of " + x.shape_str());
  resize_like(out, x);
  copy_view(view_of(x), out);
  int64_t st[kMaxDims];
  for (int k = 0, j = 0; k < x.dim; k++) if (k != d) st[j++] = out.strides[k];
  write_region(src, out, idx * out.strides[d], st);
}

// Python slice bounds: start/end clamped to [0, n]; returns the slice length for step > 0.
int64_t slice_len(int64_t n, const EValue* s, const EValue* e, int64_t step, int64_t& start) {
  if (step <= 0) throw_exec("slice step must be positive");
  int64_t b = s->tag == Tag::None ? 0 : s->i, en = e->tag == Tag::None ? n : e->i;
  if (b < 0) b += n;
  if (en < 0) en += n;
  b = std::min(std::max<int64_t>(b, 0), n);
  en = std::min(std::max<int64_t>(en, 0), n);
  start = b;
  return en > b ? (en - b + step - 1) / step : 0;
}

// slice_scatter.out(self, src, dim, start?, end?, step, out)
void slice_scatter_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &src = tensor_arg(a, 1);
  if (x.dim == 0) throw_exec("slice_scatter: input must have at least one dim");
  int d = (int)wrap_dim(int_arg(a, 2), x.dim);
  for (int i : {3, 4})
    if (a[i]->tag != Tag::None && a[i]->tag != Tag::Int) throw_exec("slice_scatter: start/end must be ints or None");
  int64_t start = 0, len = slice_len(x.sizes[d], a[3], a[4], int_arg(a, 5), start), step = int_arg(a, 5);
  Tensor& out = tensor_arg(a, 6);
  check_out_dtype(out, x.dtype, "slice_scatter");
  check_same_dtype(src, x.dtype, "slice_scatter", "src");
  if (src.dim != x.dim) throw_exec("slice_scatter: src " + src.shape_str() + " must have the slice's shape");
  for (int k = 0; k < x.dim; k++)
    if (src.sizes[k] != (k == d ? len : x.sizes[k]))
      throw_exec("slice_scatter: src " + src.shape_str() + " does not match the slice (length " + std::to_string(len) + ") of " + x.shape_str());
  resize_like(out, x);
  copy_view(view_of(x), out);
  int64_t st[kMaxDims];
  for (int k = 0; k < x.dim; k++) st[k] = out.strides[k] * (k == d ? step : 1);
  write_region(src, out, start * out.strides[d], st);
}

// The mask broadcast against self: calls f(out_index, self_offset, is_set) in row-major order.
template <typename F>
void for_each_masked(const Tensor& x, const Tensor& m, const Tensor& shape, F&& f) {
  if (m.dtype != DType::Bool && m.dtype != DType::U8) throw_exec(std::string("mask must be bool, got ") + dtype_name(m.dtype));
  BroadcastStrides bx = broadcast_strides(x, shape), bm = broadcast_strides(m, shape);
  int64_t pos[kMaxDims] = {};
  for (int64_t i = 0, n = shape.numel(); i < n; i++) {
    int64_t xo = 0, mo = 0;
    for (int k = 0; k < shape.dim; k++) { xo += pos[k] * bx.strides[k]; mo += pos[k] * bm.strides[k]; }
    f(i, xo, load_i64(m.data, m.dtype, mo) != 0);
    for (int k = shape.dim - 1; k >= 0; k--) { if (++pos[k] < shape.sizes[k]) break; pos[k] = 0; }
  }
}
Tensor shape_tensor(const std::vector<int64_t>& s) {
  Tensor t;
  t.dim = (int)s.size();
  for (int k = 0; k < t.dim; k++) t.sizes[k] = s[k];
  t.compute_strides();
  return t;
}
void copy_one(const Tensor& src, int64_t so, Tensor& dst, int64_t d) {
  size_t es = src.elem_size();
  std::memmove((uint8_t*)dst.data + d * es, (const uint8_t*)src.data + so * es, es);
}

// masked_scatter.out(self, mask, source, out): masked positions take source's elements in order.
void masked_scatter_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &m = tensor_arg(a, 1), &src = tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  check_out_dtype(out, x.dtype, "masked_scatter");
  check_same_dtype(src, x.dtype, "masked_scatter", "source");
  check_contiguous(src, "masked_scatter source");
  auto s = broadcast_shapes(x, m);
  resize(out, s);
  check_contiguous(out, "masked_scatter output");
  Tensor sh = shape_tensor(s);
  int64_t count = 0;
  for_each_masked(x, m, sh, [&](int64_t, int64_t, bool set) { count += set; });
  if (count > src.numel())
    throw_exec("masked_scatter: the mask selects " + std::to_string(count) + " elements but source has " + std::to_string(src.numel()));
  int64_t k = 0;
  for_each_masked(x, m, sh, [&](int64_t i, int64_t xo, bool set) {
    if (set) copy_one(src, k++, out, i);
    else copy_one(x, xo, out, i);
  });
}

// masked_select.out(self, mask, out): the 1-D list of self's elements where the mask is set.
void masked_select_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &m = tensor_arg(a, 1);
  Tensor& out = tensor_arg(a, 2);
  check_out_dtype(out, x.dtype, "masked_select");
  Tensor sh = shape_tensor(broadcast_shapes(x, m));
  int64_t count = 0;
  for_each_masked(x, m, sh, [&](int64_t, int64_t, bool set) { count += set; });
  resize(out, {count});
  int64_t k = 0;
  for_each_masked(x, m, sh, [&](int64_t, int64_t xo, bool set) { if (set) copy_one(x, xo, out, k++); });
}

// The in-place ops write their first argument; a distinct output value, if the program gives
// one, receives the same result.
void mirror_result(EValue** a, size_t nargs, int out_arg, const Tensor& self) {
  if ((size_t)out_arg >= nargs || a[out_arg] == a[0] || a[out_arg]->tag != Tag::Tensor) return;
  Tensor& out = a[out_arg]->t;
  if (out.data == self.data) return;
  check_writable(out, "in-place op output");
  check_out_dtype(out, self.dtype, "in-place op");
  resize_like(out, self);
  copy_view(view_of(self), out);
}

// aten::copy_(self, src, non_blocking): src (broadcast, converted to self's dtype) into self.
void copy_inplace_kernel(KernelContext&, EValue** a, size_t nargs) {
  Tensor& self = tensor_arg(a, 0);
  const Tensor& src = tensor_arg(a, 1);
  check_writable(self, "copy_");
  if (is_complex(self.dtype) != is_complex(src.dtype) || (is_complex(self.dtype) && self.dtype != src.dtype))
    throw_exec(std::string("copy_: cannot copy ") + dtype_name(src.dtype) + " into " + dtype_name(self.dtype));
  BroadcastStrides bs = broadcast_strides(src, self);
  View v = view_of(src);
  v.dim = bs.dim;
  for (int k = 0; k < bs.dim; k++) { v.sizes[k] = self.sizes[k]; v.strides[k] = bs.strides[k]; }
  if (self.data == src.data && src.numel() == self.numel() && src.default_dim_order() && self.default_dim_order()) {
    // copying a tensor onto itself (or a same-layout alias) changes nothing
  } else if (self.numel() && self.nbytes() <= self.capacity) {
    if (self.data != src.data) copy_view(v, self);
    else {  // overlapping with a different layout: go through a temporary
      std::vector<uint8_t> tmp(self.nbytes());
      Tensor t = self;
      t.data = tmp.data();
      t.capacity = tmp.size();
      for (int k = 0; k < t.dim; k++) t.dim_order[k] = (uint8_t)k;
      t.compute_strides();
      copy_view(v, t);
      copy_view(view_of(t), self);
    }
  } else if (self.numel()) {
    throw_exec("copy_: the destination's shape exceeds its memory");
  }
  mirror_result(a, nargs, 3, self);
}

// aten::index_put_(self, indices, values, accumulate): writes values at the indexed positions of self.
void index_put_inplace_kernel(KernelContext& ctx, EValue** a, size_t nargs) {
  Tensor& self = tensor_arg(a, 0);
  check_writable(self, "index_put_");
  MaskExpansion masks;
  auto ids = expand_masks(self, tensor_list_arg(ctx, a, 1, true), masks);
  const Tensor& v = tensor_arg(a, 2);
  bool acc = bool_arg(a, 3);
  if (is_complex(self.dtype) || is_complex(v.dtype)) throw_exec("index_put_: complex tensors are not supported");
  if (self.nbytes() > self.capacity) throw_exec("index_put_: the destination's shape exceeds its memory");
  std::vector<int64_t> offs, shape;
  index_positions(self, ids, offs, shape);  // validates every index against self's sizes
  Tensor sh = shape_tensor(shape);
  BroadcastStrides bs = broadcast_strides(v, sh);
  View vv = view_of(v);
  int64_t pos[kMaxDims] = {};
  bool same = v.dtype == self.dtype;
  for (size_t i = 0; i < offs.size(); i++) {
    int64_t vo = vv.offset;
    for (int k = 0; k < sh.dim; k++) vo += pos[k] * bs.strides[k];
    if (acc) {
      if (is_floating(self.dtype) || is_floating(v.dtype))
        store_f64(self.data, self.dtype, offs[i], load_f64(self.data, self.dtype, offs[i]) + load_f64(v.data, v.dtype, vo));
      else
        store_i64(self.data, self.dtype, offs[i],
                  (int64_t)((uint64_t)load_i64(self.data, self.dtype, offs[i]) + (uint64_t)load_i64(v.data, v.dtype, vo)));
    } else if (same) {
      copy_one(v, vo, self, offs[i]);
    } else if (is_floating(self.dtype) || is_floating(v.dtype)) {
      store_f64(self.data, self.dtype, offs[i], load_f64(v.data, v.dtype, vo));
    } else {
      store_i64(self.data, self.dtype, offs[i], load_i64(v.data, v.dtype, vo));
    }
    for (int k = sh.dim - 1; k >= 0; k--) { if (++pos[k] < sh.sizes[k]) break; pos[k] = 0; }
  }
  mirror_result(a, nargs, 4, self);
}

}  // namespace

void register_scatter_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::select_scatter.out", &select_scatter_kernel, P, 5);
  r.add("aten::slice_scatter.out", &slice_scatter_kernel, P, 7);
  r.add("aten::masked_scatter.out", &masked_scatter_kernel, P, 4);
  r.add("aten::masked_select.out", &masked_select_kernel, P, 3);
  r.add("aten::copy_", &copy_inplace_kernel, P, 3);
  r.add("aten::index_put_", &index_put_inplace_kernel, P, 4);
}

}  // namespace etnp
