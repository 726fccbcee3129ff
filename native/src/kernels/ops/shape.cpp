// Layout kernels: view/permute/expand/slice/select/squeeze/unsqueeze/cat/stack/split/
// unbind/repeat/flip/roll/pads/tril/triu, dtype and dim-order copies.
#include "kernels/ops/copy_util.h"

namespace etnp {
namespace {

// out = x, same dtype (clone, alias, tril/triu)
void copy_all(KernelContext& ctx, const Tensor& x, Tensor& out) {
  prepare_out(ctx, out, x.dtype, x.sizes, x.dim);
  copy_view(view_of(x), out);
}

// view_copy.out(self, size, out) / _unsafe_view / reshape: -1 is inferred
void view_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Dims s;
  int_list_into(ctx, a, 1, s);
  view_shape_in_place(x, s);
  Tensor& out = tensor_arg(a, 2);
  check_contiguous(x, "view input");
  prepare_out(ctx, out, x.dtype, s.d, s.n);
  if (out.data != x.data && x.nbytes()) std::memmove(out.data, x.data, x.nbytes());
}

// permute_copy.out(self, dims, out)
void permute_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Dims p;
  int_list_into(ctx, a, 1, p);
  Tensor& out = tensor_arg(a, 2);
  if (p.n != x.dim) throw_exec("permute: dims do not match the input rank");
  View v = view_of(x);
  int64_t s[kMaxDims];
  unsigned seen = 0;
  for (int i = 0; i < x.dim; i++) {
    int d = (int)wrap_dim(p[i], x.dim);
    if (seen & (1u << d)) throw_exec("permute: repeated dim");
    seen |= 1u << d;
    v.sizes[i] = s[i] = x.sizes[d];
    v.strides[i] = x.strides[d];
  }
  prepare_out(ctx, out, x.dtype, s, x.dim);
  copy_view(v, out);
}

// transpose_copy.int_out(self, dim0, dim1, out) / t_copy.out(self, out)
void transpose_impl(KernelContext& ctx, const Tensor& x, int64_t d0, int64_t d1, Tensor& out) {
  View v = view_of(x);
  if (x.dim >= 2) {
    int a0 = (int)wrap_dim(d0, x.dim), a1 = (int)wrap_dim(d1, x.dim);
    std::swap(v.sizes[a0], v.sizes[a1]);
    std::swap(v.strides[a0], v.strides[a1]);
  }
  prepare_out(ctx, out, x.dtype, v.sizes, v.dim);
  copy_view(v, out);
}
void transpose_kernel(KernelContext& ctx, EValue** a, size_t) {
  transpose_impl(ctx, tensor_arg(a, 0), int_arg(a, 1), int_arg(a, 2), tensor_arg(a, 3));
}
void t_kernel(KernelContext& ctx, EValue** a, size_t) { transpose_impl(ctx, tensor_arg(a, 0), 0, 1, tensor_arg(a, 1)); }

// expand_copy.out(self, size, implicit, out)
void expand_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Dims s;
  int_list_into(ctx, a, 1, s);
  Tensor& out = tensor_arg(a, 3);
  int nd = s.n;
  if (nd < x.dim || nd > kMaxDims) throw_exec("expand: target rank is smaller than the input rank");
  View v = view_of(x);
  v.dim = nd;
  for (int i = 0; i < nd; i++) {
    int k = i - (nd - x.dim);
    int64_t xs = k >= 0 ? x.sizes[k] : 1;
    if (s[i] == -1) s[i] = xs;
    if (xs != s[i] && xs != 1) throw_exec("expand: size " + std::to_string(xs) + " cannot expand to " + std::to_string(s[i]));
    v.sizes[i] = s[i];
    v.strides[i] = (k >= 0 && xs == s[i]) ? x.strides[k] : 0;
  }
  prepare_out(ctx, out, x.dtype, s.d, s.n);
  copy_view(v, out);
}

// slice_copy.Tensor_out(self, dim, start?, end?, step, out)
void slice_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  int64_t n = x.sizes[d];
  int64_t start = opt_present(a, 2) ? int_arg(a, 2) : 0, end = opt_present(a, 3) ? int_arg(a, 3) : n;
  int64_t step = int_arg(a, 4);
  Tensor& out = tensor_arg(a, 5);
  if (step <= 0) throw_exec("slice: step must be positive");
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::min(std::max<int64_t>(start, 0), n);
  end = std::min(std::max<int64_t>(end, start), n);
  View v = view_of(x);
  v.offset = start * x.strides[d];
  // (no overflow for any step: a step past the span takes one element, whose stride is unused)
  const int64_t span = end - start;
  v.sizes[d] = span == 0 ? 0 : 1 + (span - 1) / step;
  v.strides[d] = v.sizes[d] > 1 ? x.strides[d] * step : x.strides[d];
  prepare_out(ctx, out, x.dtype, v.sizes, v.dim);
  copy_view(v, out);
}

// narrow_copy.out(self, dim, start, length, out)
void narrow_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  int64_t start = int_arg(a, 2), len = int_arg(a, 3);
  if (start < 0) start += x.sizes[d];
  if (start < 0 || len < 0 || start + len > x.sizes[d]) throw_exec("narrow: range out of bounds");
  View v = view_of(x);
  v.offset = start * x.strides[d];
  v.sizes[d] = len;
  Tensor& out = tensor_arg(a, 4);
  prepare_out(ctx, out, x.dtype, v.sizes, v.dim);
  copy_view(v, out);
}

// select_copy.int_out(self, dim, index, out)
void select_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  if (x.dim == 0) throw_exec("select: cannot select from a 0-d tensor");
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  int64_t i = int_arg(a, 2);
  if (i < -x.sizes[d] || i >= x.sizes[d]) throw_exec("select: index " + std::to_string(i) + " out of range");
  if (i < 0) i += x.sizes[d];
  View v = view_of(x);
  v.offset = i * x.strides[d];
  for (int k = d; k + 1 < x.dim; k++) { v.sizes[k] = v.sizes[k + 1]; v.strides[k] = v.strides[k + 1]; }
  v.dim--;
  Tensor& out = tensor_arg(a, 3);
  prepare_out(ctx, out, x.dtype, v.sizes, v.dim);
  copy_view(v, out);
}

// unsqueeze_copy.out(self, dim, out)
void unsqueeze_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t d = int_arg(a, 1);
  if (d < 0) d += x.dim + 1;
  if (d < 0 || d > x.dim) throw_exec("unsqueeze: dim out of range");
  if (x.dim >= kMaxDims) throw_exec("unsqueeze: more than " + std::to_string(kMaxDims) + " dimensions");
  int64_t s[kMaxDims];
  for (int i = 0, j = 0; i <= x.dim; i++) s[i] = i == d ? 1 : x.sizes[j++];
  Tensor& out = tensor_arg(a, 2);
  check_contiguous(x, "unsqueeze input");
  prepare_out(ctx, out, x.dtype, s, x.dim + 1);
  if (out.data != x.data && x.nbytes()) std::memmove(out.data, x.data, x.nbytes());  // same element order
}

void squeeze_impl(KernelContext& ctx, const Tensor& x, const Dims& dims, bool all, Tensor& out) {
  Dims s;
  for (int i = 0; i < x.dim; i++) {
    bool drop = x.sizes[i] == 1 && all;
    for (auto d : dims) if (wrap_dim(d, x.dim) == i && x.sizes[i] == 1) drop = true;
    if (!drop) s.push(x.sizes[i]);
  }
  prepare_out(ctx, out, x.dtype, s.d, s.n);
  check_contiguous(x, "squeeze input");
  if (out.data != x.data && x.nbytes()) std::memmove(out.data, x.data, x.nbytes());
}
void squeeze_dims_kernel(KernelContext& ctx, EValue** a, size_t) {
  Dims dims;
  int_list_into(ctx, a, 1, dims);
  squeeze_impl(ctx, tensor_arg(a, 0), dims, false, tensor_arg(a, 2));
}
void squeeze_all_kernel(KernelContext& ctx, EValue** a, size_t) {
  squeeze_impl(ctx, tensor_arg(a, 0), Dims(), true, tensor_arg(a, 1));
}

// cat.out(tensors, dim, out)
void cat_kernel(KernelContext& ctx, EValue** a, size_t) {
  auto ts = tensor_list_arg(ctx, a, 0);
  int64_t dim = int_arg(a, 1);
  Tensor& out = tensor_arg(a, 2);
  const Tensor* ref = nullptr;
  for (auto* t : ts)  // legacy: 1-D empty tensors are skipped
    if (!(t->dim == 1 && t->sizes[0] == 0)) { ref = t; break; }
  if (!ref) { resize(out, {0}); return; }
  int d = (int)wrap_dim(dim, ref->dim);
  Dims s = dims_of(*ref);
  s[d] = 0;
  for (auto* t : ts) {
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    if (t->dim != ref->dim) throw_exec("cat: tensors must have the same rank");
    for (int i = 0; i < ref->dim; i++)
      if (i != d && t->sizes[i] != ref->sizes[i]) throw_exec("cat: sizes must match except in the cat dimension");
    s[d] += t->sizes[d];
  }
  resize_tensor(out, s.n, s.d);
  int64_t off = 0;
  for (auto* t : ts) {
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    copy_view(view_of(*t), out, off * out.strides[d]);
    off += t->sizes[d];
  }
}

// stack.out(tensors, dim, out)
void stack_kernel(KernelContext& ctx, EValue** a, size_t) {
  auto ts = tensor_list_arg(ctx, a, 0);
  if (ts.empty()) throw_exec("stack: empty tensor list");
  int64_t d = int_arg(a, 1);
  const Tensor& r = *ts[0];
  if (d < 0) d += r.dim + 1;
  if (d < 0 || d > r.dim) throw_exec("stack: dim out of range");
  auto s = shape_of(r);
  s.insert(s.begin() + d, (int64_t)ts.size());
  Tensor& out = tensor_arg(a, 2);
  prepare_out(ctx, out, r.dtype, s);
  int64_t ostr[kMaxDims];
  for (int i = 0, k = 0; i < out.dim; i++) if (i != d) ostr[k++] = out.strides[i];
  for (size_t i = 0; i < ts.size(); i++) {
    if (shape_of(*ts[i]) != shape_of(r)) throw_exec("stack: all tensors must have the same shape");
    copy_view(view_of(*ts[i]), out, (int64_t)i * out.strides[d], ostr);
  }
}

void split_into(KernelContext& ctx, const Tensor& x, int d, const std::vector<int64_t>& sizes, const std::vector<Tensor*>& outs) {
  if (sizes.size() != outs.size()) throw_exec("split: number of outputs does not match");
  int64_t off = 0;
  for (size_t i = 0; i < outs.size(); i++) {
    View v = view_of(x);
    v.offset = off * x.strides[d];
    v.sizes[d] = sizes[i];
    if (off + sizes[i] > x.sizes[d] || sizes[i] < 0) throw_exec("split: sizes exceed the dimension");
    prepare_out(ctx, *outs[i], x.dtype, std::vector<int64_t>(v.sizes, v.sizes + v.dim));
    copy_view(v, *outs[i]);
    off += sizes[i];
  }
  if (off != x.sizes[d]) throw_exec("split: sizes do not add up to the dimension");
}
// split_with_sizes_copy.out(self, split_sizes, dim, out[])
void split_sizes_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  split_into(ctx, x, (int)wrap_dim(int_arg(a, 2), x.dim), int_list_arg(ctx, a, 1), tensor_list_arg(ctx, a, 3));
}
// split_copy.Tensor_out(self, split_size, dim, out[])
void split_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 2), x.dim);
  int64_t ss = int_arg(a, 1);
  auto outs = tensor_list_arg(ctx, a, 3);
  std::vector<int64_t> sizes;
  for (int64_t r = x.sizes[d]; sizes.size() < outs.size(); r -= ss) sizes.push_back(std::max<int64_t>(0, std::min(ss, r)));
  split_into(ctx, x, d, sizes, outs);
}
// unbind_copy.int_out(self, dim, out[])
void unbind_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  auto outs = tensor_list_arg(ctx, a, 2);
  if ((int64_t)outs.size() != x.sizes[d]) throw_exec("unbind: number of outputs does not match");
  for (size_t i = 0; i < outs.size(); i++) {
    View v = view_of(x);
    v.offset = (int64_t)i * x.strides[d];
    for (int k = d; k + 1 < x.dim; k++) { v.sizes[k] = v.sizes[k + 1]; v.strides[k] = v.strides[k + 1]; }
    v.dim--;
    prepare_out(ctx, *outs[i], x.dtype, std::vector<int64_t>(v.sizes, v.sizes + v.dim));
    copy_view(v, *outs[i]);
  }
}

// repeat.out(self, repeats, out)
void repeat_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto r = int_list_arg(ctx, a, 1);
  Tensor& out = tensor_arg(a, 2);
  int nd = (int)r.size();
  if (nd < x.dim) throw_exec("repeat: fewer repeats than dimensions");
  std::vector<int64_t> s(nd);
  View v{};  // view of x broadcast into [r0, s0, r1, s1, ...]
  v.dtype = x.dtype; v.data = x.data; v.dim = 2 * nd; v.offset = 0;
  if (v.dim > kMaxDims) throw_exec("repeat: rank too large");
  for (int i = 0; i < nd; i++) {
    int k = i - (nd - x.dim);
    int64_t xs = k >= 0 ? x.sizes[k] : 1;
    s[i] = xs * r[i];
    v.sizes[2 * i] = r[i]; v.strides[2 * i] = 0;
    v.sizes[2 * i + 1] = xs; v.strides[2 * i + 1] = k >= 0 ? x.strides[k] : 0;
  }
  prepare_out(ctx, out, x.dtype, s);
  int64_t ds[kMaxDims];
  for (int i = 0; i < nd; i++) { ds[2 * i] = v.sizes[2 * i + 1] * out.strides[i]; ds[2 * i + 1] = out.strides[i]; }
  copy_view(v, out, 0, ds);
}

// flip.out(self, dims, out)
void flip_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto dims = int_list_arg(ctx, a, 1);
  View v = view_of(x);
  for (auto d0 : dims) {
    int d = (int)wrap_dim(d0, x.dim);
    v.offset += (x.sizes[d] - 1) * x.strides[d];
    v.strides[d] = -x.strides[d];
  }
  Tensor& out = tensor_arg(a, 2);
  prepare_out(ctx, out, x.dtype, shape_of(x));
  if (x.numel()) copy_view(v, out);
}

// roll.out(self, shifts, dims, out)
void roll_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto shifts = int_list_arg(ctx, a, 1), dims = int_list_arg(ctx, a, 2);
  Tensor& out = tensor_arg(a, 3);
  prepare_out(ctx, out, x.dtype, shape_of(x));
  check_contiguous(x, "roll input");
  if (dims.empty()) throw_exec("roll without dims is not supported");
  if (dims.size() != shifts.size()) throw_exec("roll: shifts and dims differ in length");
  int64_t n = x.numel();
  size_t es = x.elem_size();
  int64_t idx[kMaxDims] = {};
  for (int64_t i = 0; i < n; i++) {
    int64_t o = 0;
    for (int d = 0; d < x.dim; d++) {
      int64_t j = idx[d];
      for (size_t k = 0; k < dims.size(); k++)
        if (wrap_dim(dims[k], x.dim) == d) j = ((j + shifts[k]) % x.sizes[d] + x.sizes[d]) % x.sizes[d];
      o += j * out.strides[d];
    }
    std::memmove((uint8_t*)out.data + o * es, (const uint8_t*)x.data + i * es, es);
    for (int d = x.dim - 1; d >= 0; d--) { if (++idx[d] < x.sizes[d]) break; idx[d] = 0; }
  }
}

// constant_pad_nd.out(self, pad, value, out); reflection/replication pads (self, padding, out)
enum class PadMode { Constant, Reflect, Replicate };
void pad_impl(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& pad, PadMode mode, double value, Tensor& out) {
  if (pad.size() % 2 || (int)pad.size() / 2 > x.dim) throw_exec("pad: invalid padding length");
  check_contiguous(x, "pad input");
  auto s = shape_of(x);
  int64_t before[kMaxDims] = {};
  for (size_t i = 0; i < pad.size() / 2; i++) {
    int d = x.dim - 1 - (int)i;
    before[d] = pad[2 * i];
    s[d] += pad[2 * i] + pad[2 * i + 1];
    if (s[d] < 0) throw_exec("pad: resulting size is negative");
    if (mode == PadMode::Reflect && (pad[2 * i] >= x.sizes[d] || pad[2 * i + 1] >= x.sizes[d]))
      throw_exec("reflection pad must be smaller than the input dimension");
  }
  prepare_out(ctx, out, x.dtype, s);
  int64_t n = out.numel(), idx[kMaxDims] = {};
  for (int64_t i = 0; i < n; i++) {
    int64_t src = 0;
    bool inside = true;
    for (int d = 0; d < x.dim; d++) {
      int64_t j = idx[d] - before[d], L = x.sizes[d];
      if (j < 0 || j >= L) {
        if (mode == PadMode::Constant || L == 0) { inside = false; break; }
        if (mode == PadMode::Replicate) j = j < 0 ? 0 : L - 1;
        else j = j < 0 ? -j : 2 * (L - 1) - j;
      }
      src += j * x.strides[d];
    }
    if (inside) {
      if (is_floating(out.dtype)) store_f64(out.data, out.dtype, i, load_f64(x.data, x.dtype, src));
      else store_i64(out.data, out.dtype, i, load_i64(x.data, x.dtype, src));
    } else {
      store_f64(out.data, out.dtype, i, value);
    }
    for (int d = x.dim - 1; d >= 0; d--) { if (++idx[d] < out.sizes[d]) break; idx[d] = 0; }
  }
}
void constant_pad_kernel(KernelContext& ctx, EValue** a, size_t) {
  pad_impl(ctx, tensor_arg(a, 0), int_list_arg(ctx, a, 1), PadMode::Constant, double_arg(a, 2), tensor_arg(a, 3));
}
template <PadMode M>
void pad_kernel(KernelContext& ctx, EValue** a, size_t) {
  pad_impl(ctx, tensor_arg(a, 0), int_list_arg(ctx, a, 1), M, 0, tensor_arg(a, 2));
}

// tril.out / triu.out (self, diagonal, out)
template <bool LOWER>
void tri_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t k = int_arg(a, 1);
  Tensor& out = tensor_arg(a, 2);
  if (x.dim < 2) throw_exec("tril/triu expect at least 2-D input");
  check_contiguous(x, "tril/triu input");
  copy_all(ctx, x, out);
  int64_t R = x.sizes[x.dim - 2], C = x.sizes[x.dim - 1], B = x.numel() / std::max<int64_t>(R * C, 1);
  size_t es = x.elem_size();
  for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) {
        bool keep = LOWER ? (j - i <= k) : (j - i >= k);
        if (!keep) std::memset((uint8_t*)out.data + ((b * R + i) * C + j) * es, 0, es);
      }
}

// clone.out(self, memory_format?, out), alias_copy/detach_copy(self, out), _to_copy.out(self, non_blocking, memory_format?, out)
void clone_kernel(KernelContext& ctx, EValue** a, size_t) { copy_all(ctx, tensor_arg(a, 0), tensor_arg(a, 2)); }
void alias_kernel(KernelContext& ctx, EValue** a, size_t) { copy_all(ctx, tensor_arg(a, 0), tensor_arg(a, 1)); }
void to_copy_kernel(KernelContext&, EValue** a, size_t) {  // the out's dtype is the requested one: converts
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 3);
  resize_like(out, x);
  copy_view(view_of(x), out);
}
// dim_order_ops::_to_dim_order_copy.out / _clone_dim_order.out (self, non_blocking, dim_order?, out):
// the out tensor carries the requested dim order; copy_view writes through its strides.
void dim_order_copy_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto order = int_list_arg(ctx, a, 2);
  Tensor& out = tensor_arg(a, 3);
  if (!order.empty()) {
    if ((int)order.size() != out.dim) throw_exec("dim_order length does not match the output rank");
    for (int i = 0; i < out.dim; i++)
      if (order[i] != out.dim_order[i]) throw_exec("requested dim_order differs from the output tensor's");
  }
  resize_like(out, x);
  copy_view(view_of(x), out);
}
// copy.out(self, src, non_blocking, out): out = broadcast(src)
void copy_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &src = tensor_arg(a, 1);
  Tensor& out = tensor_arg(a, 3);
  prepare_out(ctx, out, x.dtype, shape_of(x));
  BroadcastStrides bs = broadcast_strides(src, out);
  View v = view_of(src);
  v.dim = bs.dim;
  for (int i = 0; i < bs.dim; i++) { v.sizes[i] = out.sizes[i]; v.strides[i] = bs.strides[i]; }
  copy_view(v, out);
}

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::view_copy.out", &view_kernel, P, 3);
  r.add("aten::_unsafe_view.out", &view_kernel, P, 3);
  r.add("aten::reshape_copy.out", &view_kernel, P, 3);
  r.add("aten::permute_copy.out", &permute_kernel, P, 3);
  r.add("aten::transpose_copy.int_out", &transpose_kernel, P, 4);
  r.add("aten::t_copy.out", &t_kernel, P, 2);
  r.add("aten::expand_copy.out", &expand_kernel, P, 4);
  r.add("aten::slice_copy.Tensor_out", &slice_kernel, P, 6);
  r.add("aten::narrow_copy.out", &narrow_kernel, P, 5);
  r.add("aten::select_copy.int_out", &select_kernel, P, 4);
  r.add("aten::unsqueeze_copy.out", &unsqueeze_kernel, P, 3);
  r.add("aten::squeeze_copy.dims_out", &squeeze_dims_kernel, P, 3);
  r.add("aten::squeeze_copy.dim_out", &squeeze_dims_kernel, P, 3);
  r.add("aten::squeeze_copy.out", &squeeze_all_kernel, P, 2);
  r.add("aten::cat.out", &cat_kernel, P, 3);
  r.add("aten::stack.out", &stack_kernel, P, 3);
  r.add("aten::split_with_sizes_copy.out", &split_sizes_kernel, P, 4);
  r.add("aten::split_copy.Tensor_out", &split_kernel, P, 4);
  r.add("aten::unbind_copy.int_out", &unbind_kernel, P, 3);
  r.add("aten::repeat.out", &repeat_kernel, P, 3);
  r.add("aten::flip.out", &flip_kernel, P, 3);
  r.add("aten::roll.out", &roll_kernel, P, 4);
  r.add("aten::constant_pad_nd.out", &constant_pad_kernel, P, 4);
  r.add("aten::reflection_pad1d.out", &pad_kernel<PadMode::Reflect>, P, 3);
  r.add("aten::reflection_pad2d.out", &pad_kernel<PadMode::Reflect>, P, 3);
  r.add("aten::reflection_pad3d.out", &pad_kernel<PadMode::Reflect>, P, 3);
  r.add("aten::replication_pad1d.out", &pad_kernel<PadMode::Replicate>, P, 3);
  r.add("aten::replication_pad2d.out", &pad_kernel<PadMode::Replicate>, P, 3);
  r.add("aten::replication_pad3d.out", &pad_kernel<PadMode::Replicate>, P, 3);
  r.add("aten::tril.out", &tri_kernel<true>, P, 3);
  r.add("aten::triu.out", &tri_kernel<false>, P, 3);
  r.add("aten::clone.out", &clone_kernel, P, 3);
  r.add("aten::alias_copy.out", &alias_kernel, P, 2);
  r.add("aten::detach_copy.out", &alias_kernel, P, 2);
  r.add("aten::lift_fresh_copy.out", &alias_kernel, P, 2);
  r.add("aten::_to_copy.out", &to_copy_kernel, P, 4);
  r.add("aten::copy.out", &copy_kernel, P, 4);
  r.add("dim_order_ops::_to_dim_order_copy.out", &dim_order_copy_kernel, P, 4);
  r.add("dim_order_ops::_clone_dim_order.out", &dim_order_copy_kernel, P, 4);
}

}  // namespace etnp
