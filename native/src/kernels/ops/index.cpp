// Indexing kernels: index_select, gather, scatter, embedding, index, index_put,
// masked_fill, topk, sort.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/ops/copy_util.h"
#include "kernels/ops/index_util.h"

namespace etnp {
namespace {

// Index semantics as torch's, per operator: advanced indexing (index.Tensor) counts negative
// indices from the end; index_select, embedding, gather and scatter refuse them (torch raises
// IndexError / RuntimeError, upstream ExecuTorch fails the call) - never a silent wrap.
int64_t wrapped_index(int64_t i, int64_t n, const char* op) {
  if (i < -n || i >= n) throw_exec(std::string(op) + ": index " + std::to_string(i) + " is out of bounds for size " + std::to_string(n));
  return i < 0 ? i + n : i;
}
int64_t nonnegative_index(int64_t i, int64_t n, const char* op) {
  if (i < 0 || i >= n)
    throw_exec(std::string(op) + ": index " + std::to_string(i) + " is out of range [0, " + std::to_string(n) + ")" +
               (i < 0 ? " (this operator takes no negative indices)" : ""));
  return i;
}
void copy_elem(const Tensor& src, int64_t so, Tensor& dst, int64_t d) {
  if (src.dtype == dst.dtype) {
    size_t es = src.elem_size();
    std::memmove((uint8_t*)dst.data + d * es, (const uint8_t*)src.data + so * es, es);
  } else if (is_floating(dst.dtype) || is_floating(src.dtype)) {
    store_f64(dst.data, dst.dtype, d, load_f64(src.data, src.dtype, so));
  } else {
    store_i64(dst.data, dst.dtype, d, load_i64(src.data, src.dtype, so));
  }
}

// index_select.out(self, dim, index, out)
void index_select_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  const Tensor& idx = tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  check_contiguous(x, "index_select input");
  auto s = shape_of(x);
  int64_t n = idx.numel();
  if (x.dim) s[d] = n;
  prepare_out(ctx, out, x.dtype, s);
  int64_t outer = prod(x, 0, d), len = x.dim ? x.sizes[d] : 1, inner = prod(x, d + 1, x.dim);
  size_t es = x.elem_size();
  if (inner == 0 || outer == 0) return;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = nonnegative_index(load_i64(idx.data, idx.dtype, j), len, "index_select");
    for (int64_t o = 0; o < outer; o++)
      std::memmove((uint8_t*)out.data + ((o * n + j) * inner) * es, (const uint8_t*)x.data + ((o * len + k) * inner) * es,
                  inner * es);
  }
}

// embedding.out(weight, indices, padding_idx, scale_grad_by_freq, sparse, out)
void embedding_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &w = tensor_arg(a, 0), &idx = tensor_arg(a, 1);
  Tensor& out = tensor_arg(a, 5);
  if (w.dim != 2) throw_exec("embedding: weight must be 2-D");
  check_contiguous(w, "embedding weight");
  auto s = shape_of(idx);
  s.push_back(w.sizes[1]);
  prepare_out(ctx, out, w.dtype, s);
  size_t row = (size_t)w.sizes[1] * w.elem_size();
  if (row == 0) return;
  for (int64_t j = 0; j < idx.numel(); j++) {
    int64_t k = nonnegative_index(load_i64(idx.data, idx.dtype, j), w.sizes[0], "embedding");
    std::memmove((uint8_t*)out.data + j * row, (const uint8_t*)w.data + k * row, row);
  }
}

// gather.out(self, dim, index, sparse_grad, out)
void gather_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  const Tensor& idx = tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 4);
  if (idx.dim != x.dim && !(x.dim == 0 && idx.dim <= 1)) throw_exec("gather: index rank must match input rank");
  prepare_out(ctx, out, x.dtype, shape_of(idx));
  int64_t n = idx.numel(), pos[kMaxDims] = {};
  for (int64_t i = 0; i < n; i++) {
    int64_t so = 0;
    for (int k = 0; k < idx.dim; k++) {
      int64_t p = pos[k];
      if (k == d) p = nonnegative_index(load_i64(idx.data, idx.dtype, i), x.sizes[d], "gather");
      else if (p >= x.sizes[k]) throw_exec("gather: index shape exceeds the input");
      so += p * x.strides[k];
    }
    copy_elem(x, so, out, i);
    for (int k = idx.dim - 1; k >= 0; k--) { if (++pos[k] < idx.sizes[k]) break; pos[k] = 0; }
  }
}

// scatter.value_out(self, dim, index, value, out) / scatter.src_out(self, dim, index, src, out) /
// scatter_add.out(self, dim, index, src, out)
template <bool ADD>
void scatter_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  const Tensor& idx = tensor_arg(a, 2);
  bool scalar = a[3]->tag != Tag::Tensor;
  double value = scalar ? double_arg(a, 3) : 0;
  const Tensor* src = scalar ? nullptr : &tensor_arg(a, 3);
  Tensor& out = tensor_arg(a, 4);
  prepare_out(ctx, out, x.dtype, shape_of(x));
  copy_view(view_of(x), out);
  int64_t n = idx.numel(), pos[kMaxDims] = {};
  for (int64_t i = 0; i < n; i++) {
    int64_t oo = 0, so = 0;
    for (int k = 0; k < idx.dim; k++) {
      int64_t p = pos[k];
      if (src) so += p * src->strides[k];
      if (k == d) p = nonnegative_index(load_i64(idx.data, idx.dtype, i), x.sizes[d], "scatter");
      else if (p >= x.sizes[k]) throw_exec("scatter: index shape exceeds the input");
      oo += p * out.strides[k];
    }
    double v = src ? load_f64(src->data, src->dtype, so) : value;
    if (ADD) v += load_f64(out.data, out.dtype, oo);
    store_f64(out.data, out.dtype, oo, v);
    for (int k = idx.dim - 1; k >= 0; k--) { if (++pos[k] < idx.sizes[k]) break; pos[k] = 0; }
  }
}

}  // namespace

// Boolean (or uint8) masks in an index list become one int64 index tensor per dim they cover,
// the coordinates of their true elements (torch's semantics: x[mask] == x[mask.nonzero().unbind(1)]).
// `store` owns the new tensors and their data.
std::vector<Tensor*> expand_masks(const Tensor& x, const std::vector<Tensor*>& ids, MaskExpansion& store) {
  bool any = false;
  for (Tensor* t : ids) any = any || (t && (t->dtype == DType::Bool || t->dtype == DType::U8));
  if (!any) return ids;
  size_t extra = 0;
  for (Tensor* t : ids)
    if (t && (t->dtype == DType::Bool || t->dtype == DType::U8)) extra += (size_t)std::max(t->dim, 1);
  store.data.reserve(extra);
  store.tensors.reserve(extra);  // no reallocation: the pointers returned below stay valid
  std::vector<Tensor*> out;
  int pos = 0;  // the first dim of x this entry indexes
  for (Tensor* t : ids) {
    if (!t || (t->dtype != DType::Bool && t->dtype != DType::U8)) {
      out.push_back(t);
      pos++;
      continue;
    }
    if (pos + t->dim > x.dim) throw_exec("index: boolean mask " + t->shape_str() + " has more dims than the input " + x.shape_str());
    for (int k = 0; k < t->dim; k++)
      if (t->sizes[k] != x.sizes[pos + k])
        throw_exec("index: boolean mask of shape " + t->shape_str() + " does not match the indexed dims of " + x.shape_str());
    View v = view_of(*t);
    std::vector<std::vector<int64_t>> coords((size_t)t->dim);
    int64_t p[kMaxDims] = {};
    for (int64_t i = 0, n = t->numel(); i < n; i++) {
      int64_t off = v.offset;
      for (int k = 0; k < t->dim; k++) off += p[k] * v.strides[k];
      if (load_i64(t->data, t->dtype, off))
        for (int k = 0; k < t->dim; k++) coords[(size_t)k].push_back(p[k]);
      for (int k = t->dim - 1; k >= 0; k--) { if (++p[k] < t->sizes[k]) break; p[k] = 0; }
    }
    if (t->dim == 0) throw_exec("index: 0-dim boolean masks are not supported");
    for (int k = 0; k < t->dim; k++) {
      store.data.push_back(std::move(coords[(size_t)k]));
      Tensor it;
      it.dtype = DType::I64;
      it.dim = 1;
      it.sizes[0] = (int64_t)store.data.back().size();
      it.compute_strides();
      it.data = store.data.back().data();
      it.capacity = store.data.back().size() * sizeof(int64_t);
      store.tensors.push_back(it);
      out.push_back(&store.tensors.back());
    }
    pos += t->dim;
  }
  return out;
}

// Advanced indexing with a list of optional index tensors on the leading dims
// (None entries keep a dim), broadcasting the index tensors together.
void index_rows(const Tensor& x, const std::vector<Tensor*>& ids, IndexRows& r, std::vector<int64_t>& out_shape) {
  // Supports None entries before the indexed dims only (the common x[:, idx] form).
  int first = -1, count = 0;
  for (size_t i = 0; i < ids.size(); i++)
    if (ids[i]) { if (first < 0) first = (int)i; count++; }
  if (first < 0) throw_exec("index: no index tensors");
  for (int i = first; i < first + count; i++)
    if (!ids[i]) throw_exec("index: non-adjacent index tensors are not supported");
  if (first + count > x.dim) throw_exec("index: too many indices");
  Tensor bshape = *ids[first];
  for (int i = first + 1; i < first + count; i++) {
    auto s = broadcast_shapes(bshape, *ids[i]);
    bshape.dim = (int)s.size();
    for (int k = 0; k < bshape.dim; k++) bshape.sizes[k] = s[k];
  }
  bshape.compute_strides();
  for (int i = first; i < first + count; i++)
    if (ids[i]->dtype == DType::Bool || ids[i]->dtype == DType::U8) throw_exec("index: unexpanded boolean mask");
  out_shape.clear();
  for (int k = 0; k < first; k++) out_shape.push_back(x.sizes[k]);
  for (int k = 0; k < bshape.dim; k++) out_shape.push_back(bshape.sizes[k]);
  for (int k = first + count; k < x.dim; k++) out_shape.push_back(x.sizes[k]);
  int64_t pre = prod(x, 0, first), post = prod(x, first + count, x.dim), nb = bshape.numel();
  std::vector<BroadcastStrides> bs;
  for (int i = first; i < first + count; i++) bs.push_back(broadcast_strides(*ids[i], bshape));
  r.row.assign((size_t)(pre * nb), 0);
  r.post.assign((size_t)post, 0);
  // offsets of the leading (p) and trailing (q) positions, decomposed once
  std::vector<int64_t> pos_pre((size_t)pre);
  for (int64_t p = 0; p < pre; p++) {
    int64_t po = 0, rem = p;
    for (int k = first - 1; k >= 0; k--) { po += (rem % x.sizes[k]) * x.strides[k]; rem /= x.sizes[k]; }
    pos_pre[(size_t)p] = po;
  }
  r.contiguous_post = true;
  for (int64_t q = 0; q < post; q++) {
    int64_t qo = 0, rem = q;
    for (int k = x.dim - 1; k >= first + count; k--) { qo += (rem % x.sizes[k]) * x.strides[k]; rem /= x.sizes[k]; }
    r.post[(size_t)q] = qo;
    r.contiguous_post = r.contiguous_post && qo == q;
  }
  int64_t bpos[kMaxDims] = {};
  for (int64_t j = 0; j < nb; j++) {
    int64_t off = 0;
    for (int i = 0; i < count; i++) {
      int64_t io = 0;
      for (int k = 0; k < bshape.dim; k++) io += bpos[k] * bs[i].strides[k];
      int dd = first + i;
      off += wrapped_index(load_i64(ids[first + i]->data, ids[first + i]->dtype, io), x.sizes[dd], "index") * x.strides[dd];
    }
    for (int64_t p = 0; p < pre; p++) r.row[(size_t)(p * nb + j)] = pos_pre[(size_t)p] + off;
    for (int k = bshape.dim - 1; k >= 0; k--) { if (++bpos[k] < bshape.sizes[k]) break; bpos[k] = 0; }
  }
}

void index_positions(const Tensor& x, const std::vector<Tensor*>& ids, std::vector<int64_t>& offsets,
                     std::vector<int64_t>& out_shape) {
  IndexRows r;
  index_rows(x, ids, r, out_shape);
  const size_t post = r.post.size();
  offsets.resize(r.row.size() * post);
  for (size_t i = 0; i < r.row.size(); i++)
    for (size_t q = 0; q < post; q++) offsets[i * post + q] = r.row[i] + r.post[q];
}

namespace {

// index.Tensor_out(self, indices, out)
void index_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  MaskExpansion masks;
  auto ids = expand_masks(x, tensor_list_arg(ctx, a, 1, true), masks);
  Tensor& out = tensor_arg(a, 2);
  IndexRows r;
  std::vector<int64_t> shape;
  index_rows(x, ids, r, shape);
  prepare_out(ctx, out, x.dtype, shape);
  const size_t es = x.elem_size(), post = r.post.size();
  if (x.dtype == out.dtype && out.default_dim_order() && r.contiguous_post && post > 0) {
    // each indexed position's trailing block (a table's row for x[idx]) copied whole; out is
    // written in order, adjacent blocks that are adjacent in x in one copy
    uint8_t* dst = (uint8_t*)out.data;
    const uint8_t* src = (const uint8_t*)x.data;
    const size_t row_bytes = post * es;
    for (size_t i = 0; i < r.row.size();) {
      size_t e = i + 1;
      while (e < r.row.size() && r.row[e] == r.row[e - 1] + (int64_t)post) e++;
      std::memmove(dst + i * row_bytes, src + r.row[i] * es, (e - i) * row_bytes);  // (a corrupt plan may overlap them)
      i = e;
    }
    return;
  }
  for (size_t i = 0; i < r.row.size(); i++)
    for (size_t q = 0; q < post; q++) copy_elem(x, r.row[i] + r.post[q], out, (int64_t)(i * post + q));
}

// index_put.out(self, indices, values, accumulate, out)
void index_put_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  MaskExpansion masks;
  auto ids = expand_masks(x, tensor_list_arg(ctx, a, 1, true), masks);
  const Tensor& v = tensor_arg(a, 2);
  bool acc = bool_arg(a, 3);
  Tensor& out = tensor_arg(a, 4);
  prepare_out(ctx, out, x.dtype, shape_of(x));
  check_contiguous(out, "index_put output");
  // (self updated in place - the out tensor an alias of a state buffer, Method::update_state_in_place:
  // its copy onto itself changes nothing)
  if (x.data != out.data || !x.default_dim_order()) copy_view(view_of(x), out);
  IndexRows r;
  std::vector<int64_t> shape;
  index_rows(out, ids, r, shape);
  Tensor sh;
  sh.dim = (int)shape.size();
  for (int k = 0; k < sh.dim; k++) sh.sizes[k] = shape[k];
  sh.compute_strides();
  BroadcastStrides bs = broadcast_strides(v, sh);
  const size_t post = r.post.size(), es = out.elem_size();
  if (!acc && v.dtype == out.dtype && v.default_dim_order() && v.numel() == sh.numel() && r.contiguous_post && post > 0) {
    // the values in order (no broadcast): each row's block copied whole (a KV cache's new entries)
    const uint8_t* src = (const uint8_t*)v.data;
    uint8_t* dst = (uint8_t*)out.data;
    for (size_t i = 0; i < r.row.size(); i++) std::memmove(dst + r.row[i] * es, src + i * post * es, post * es);
    return;
  }
  int64_t pos[kMaxDims] = {};
  for (size_t i = 0; i < r.row.size(); i++)
    for (size_t q = 0; q < post; q++) {
      int64_t vo = 0;
      for (int k = 0; k < sh.dim; k++) vo += pos[k] * bs.strides[k];
      const int64_t off = r.row[i] + r.post[q];
      double val = load_f64(v.data, v.dtype, vo);
      if (acc) val += load_f64(out.data, out.dtype, off);
      store_f64(out.data, out.dtype, off, val);
      for (int k = sh.dim - 1; k >= 0; k--) { if (++pos[k] < sh.sizes[k]) break; pos[k] = 0; }
    }
}

// nonzero.out(self, out): int64 [n, rank], the coordinates of the non-zero elements in row-major order.
void nonzero_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 1);
  if (out.dtype != DType::I64) throw_exec(std::string("nonzero: output dtype ") + dtype_name(out.dtype) + " is not int64");
  View v = view_of(x);
  int64_t n = 0, numel = x.numel();
  std::vector<int64_t> offs;  // element offsets of every position, following x's strides
  offs.reserve((size_t)numel);
  int64_t pos[kMaxDims] = {};
  for (int64_t i = 0; i < numel; i++) {
    int64_t off = v.offset;
    for (int k = 0; k < x.dim; k++) off += pos[k] * v.strides[k];
    if (load_f64(x.data, x.dtype, off) != 0.0) {
      offs.push_back(i);
      n++;
    }
    for (int k = x.dim - 1; k >= 0; k--) { if (++pos[k] < x.sizes[k]) break; pos[k] = 0; }
  }
  resize(out, {n, (int64_t)x.dim});  // any dim order: torch plans nonzero's output column-major
  if (out.dim != 2) throw_exec("nonzero: output must be 2-D");
  int64_t* o = out.ptr<int64_t>();
  const int64_t rs = out.strides[0], cs = out.strides[1];
  for (int64_t r = 0; r < n; r++) {
    int64_t rem = offs[(size_t)r];
    for (int k = x.dim - 1; k >= 0; k--) {
      o[r * rs + k * cs] = rem % x.sizes[k];
      rem /= x.sizes[k];
    }
  }
}

// masked_fill.Scalar_out(self, mask, value, out)
void masked_fill_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &m = tensor_arg(a, 1);
  double v = double_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  prepare_out(ctx, out, x.dtype, broadcast_shapes(x, m));
  const Tensor* ins[2] = {&x, &m};
  for_each_broadcast(out, ins, 2, [&](int64_t o, const int64_t* off) {
    if (load_i64(m.data, m.dtype, off[1])) store_f64(out.data, out.dtype, o, v);
    else copy_elem(x, off[0], out, o);
  });
}

// Sorting along a dim: writes the first k of each run (values and int64 indices).
void sort_along(KernelContext& ctx, const Tensor& x, int d, int64_t k, bool descending, bool stable, Tensor& values, Tensor& indices) {
  check_contiguous(x, "sort input");
  auto s = shape_of(x);
  if (x.dim) s[d] = k;
  prepare_out(ctx, values, x.dtype, s, "values");
  prepare_out(ctx, indices, DType::I64, s, "indices");
  int64_t outer = prod(x, 0, d), len = x.dim ? x.sizes[d] : 1, inner = prod(x, d + 1, x.dim);
  std::vector<int64_t> order((size_t)len);
  std::vector<double> vals((size_t)len);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t j = 0; j < len; j++) vals[j] = load_f64(x.data, x.dtype, (o * len + j) * inner + i);
      std::iota(order.begin(), order.end(), 0);
      auto cmp = [&](int64_t p, int64_t q) {  // NaN sorts as the largest value
        double u = vals[p], w = vals[q];
        bool un = std::isnan(u), wn = std::isnan(w);
        if (descending) return un ? !wn : (!wn && u > w);
        return wn ? !un : (!un && u < w);
      };
      (void)stable;
      std::stable_sort(order.begin(), order.end(), cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t oo = (o * k + j) * inner + i;
        copy_elem(x, (o * len + order[j]) * inner + i, values, oo);
        store_i64(indices.data, indices.dtype, oo, order[j]);
      }
    }
}
// topk.values(self, k, dim, largest, sorted, values, indices)
void topk_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t k = int_arg(a, 1);
  int d = (int)wrap_dim(int_arg(a, 2), x.dim);
  if (k < 0 || k > (x.dim ? x.sizes[d] : 1)) throw_exec("topk: k is out of range");
  sort_along(ctx, x, d, k, bool_arg(a, 3), true, tensor_arg(a, 5), tensor_arg(a, 6));
}
// sort.values(self, dim, descending, values, indices)
void sort_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  sort_along(ctx, x, d, x.dim ? x.sizes[d] : 1, bool_arg(a, 2), true, tensor_arg(a, 3), tensor_arg(a, 4));
}
// sort.values_stable(self, stable?, dim, descending, values, indices)
void sort_stable_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 2), x.dim);
  sort_along(ctx, x, d, x.dim ? x.sizes[d] : 1, bool_arg(a, 3), true, tensor_arg(a, 4), tensor_arg(a, 5));
}

}  // namespace

void register_index_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::index_select.out", &index_select_kernel, P, 4);
  r.add("aten::embedding.out", &embedding_kernel, P, 6);
  r.add("aten::gather.out", &gather_kernel, P, 5);
  r.add("aten::scatter.value_out", &scatter_kernel<false>, P, 5);
  r.add("aten::scatter.src_out", &scatter_kernel<false>, P, 5);
  r.add("aten::scatter_add.out", &scatter_kernel<true>, P, 5);
  r.add("aten::index.Tensor_out", &index_kernel, P, 3);
  r.add("aten::nonzero.out", &nonzero_kernel, P, 2);
  r.add("aten::index_put.out", &index_put_kernel, P, 5);
  r.add("aten::masked_fill.Scalar_out", &masked_fill_kernel, P, 4);
  r.add("aten::topk.values", &topk_kernel, P, 7);
  r.add("aten::sort.values", &sort_kernel, P, 5);
  r.add("aten::sort.values_stable", &sort_stable_kernel, P, 6);
}

}  // namespace etnp
