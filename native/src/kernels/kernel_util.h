// Helpers shared by the kernels: argument accessors, shape utilities, broadcasting.
#pragma once
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evalue.h"
#include "kernels/out_check.h"
#include "kernels/registry.h"
#include "threadpool/threadpool.h"

namespace etnp {

// ---- argument access ----
inline Tensor& tensor_arg(EValue** a, int i) {
  if (a[i]->tag != Tag::Tensor) throw_exec("argument " + std::to_string(i) + ": expected a Tensor, got " + tag_name(a[i]->tag));
  return a[i]->t;
}
inline Tensor* opt_tensor_arg(EValue** a, int i) { return a[i]->tag == Tag::None ? nullptr : &tensor_arg(a, i); }
inline int64_t int_arg(EValue** a, int i) {
  if (a[i]->tag != Tag::Int && a[i]->tag != Tag::Bool)
    throw_exec("argument " + std::to_string(i) + ": expected an int, got " + tag_name(a[i]->tag));
  return a[i]->i;
}
inline bool bool_arg(EValue** a, int i) { return int_arg(a, i) != 0; }
inline bool is_scalar(const EValue* v) { return v->tag == Tag::Int || v->tag == Tag::Bool || v->tag == Tag::Double; }
inline double double_arg(EValue** a, int i) {
  const EValue* v = a[i];
  if (v->tag == Tag::Double) return v->d;
  if (v->tag == Tag::Int || v->tag == Tag::Bool) return (double)v->i;
  if (v->tag == Tag::Tensor && v->t.numel() == 1) return load_f64(v->t.data, v->t.dtype, 0);
  throw_exec("argument " + std::to_string(i) + ": expected a scalar, got " + tag_name(v->tag));
}
inline bool opt_present(EValue** a, int i) { return a[i]->tag != Tag::None; }
inline std::string string_arg(EValue** a, int i) { return a[i]->tag == Tag::String ? a[i]->s : std::string(); }
std::vector<int64_t> int_list_arg(KernelContext& ctx, EValue** a, int i);  // also accepts None -> empty

// A shape (or a list of dims) on the stack: at most kMaxDims values, what a tensor holds - the
// layout kernels' sizes without an allocation per call.
struct Dims {
  int64_t d[kMaxDims];
  int n = 0;
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) {  // ({} empty, {dim} one: never an aggregate's silent zero count)
    for (int64_t x : v) push(x);
  }
  void push(int64_t v) {
    if (n >= kMaxDims) throw_exec("more than " + std::to_string(kMaxDims) + " dimensions");
    d[n++] = v;
  }
  int64_t& operator[](int i) { return d[i]; }
  int64_t operator[](int i) const { return d[i]; }
  int size() const { return n; }
  bool empty() const { return n == 0; }
  const int64_t* begin() const { return d; }
  const int64_t* end() const { return d + n; }
};
inline Dims dims_of(const Tensor& t) {
  Dims s;
  s.n = t.dim;
  std::memcpy(s.d, t.sizes, sizeof(int64_t) * (size_t)t.dim);
  return s;
}
// int_list_arg into a Dims (a list longer than kMaxDims: an error)
void int_list_into(KernelContext& ctx, EValue** a, int i, Dims& out);
std::vector<Tensor*> tensor_list_arg(KernelContext& ctx, EValue** a, int i, bool allow_none = false);

// ---- checks ----
inline void check_dtype(const Tensor& t, DType d, const char* what) {
  if (t.dtype != d) throw_exec(std::string(what) + ": expected dtype " + dtype_name(d) + ", got " + dtype_name(t.dtype));
}
inline void check_contiguous(const Tensor& t, const char* what) {
  if (!t.default_dim_order()) throw_exec(std::string(what) + ": non-contiguous dim order is not supported by this op");
}
// In-place ops write tensors the program names as arguments: never a constant (program data
// shared by every method).
inline void check_writable(const Tensor& t, const char* what) {
  if (t.is_constant) throw_exec(std::string(what) + ": cannot write a constant tensor");
}
[[noreturn]] inline void unsupported_dtype(KernelContext& ctx, DType d) {
  throw_exec(std::string("dtype ") + dtype_name(d) + " is not supported by " + ctx.op);
}
inline void resize(Tensor& t, const std::vector<int64_t>& s) { resize_tensor(t, (int)s.size(), s.data()); }
// t resized to like's shape (no allocation)
inline void resize_like(Tensor& t, const Tensor& like) { resize_tensor(t, like.dim, like.sizes); }
inline std::vector<int64_t> shape_of(const Tensor& t) { return std::vector<int64_t>(t.sizes, t.sizes + t.dim); }
inline int64_t wrap_dim(int64_t d, int64_t ndim) {
  int64_t n = ndim == 0 ? 1 : ndim;
  if (d < -n || d >= n) throw_exec("dimension " + std::to_string(d) + " out of range for rank " + std::to_string(ndim));
  return d < 0 ? d + n : d;
}
// Product of sizes in [b, e).
inline int64_t prod(const Tensor& t, int b, int e) {
  int64_t p = 1;
  for (int i = b; i < e; i++) p *= t.sizes[i];
  return p;
}

// Resolves a view size list against x in place (one -1 is inferred); throws if it does not hold
// x's elements.
void view_shape_in_place(const Tensor& x, Dims& s);

// ---- broadcasting ----
std::vector<int64_t> broadcast_shapes(const Tensor& a, const Tensor& b);
// The same into out (kMaxDims room, no allocation); returns the rank.
int broadcast_shape_into(const Tensor& a, const Tensor& b, int64_t* out);
// out resized to the broadcast shape of a and b (no allocation)
inline void resize_broadcast(Tensor& out, const Tensor& a, const Tensor& b) {
  int64_t s[kMaxDims];
  resize_tensor(out, broadcast_shape_into(a, b, s), s);
}
// Element offsets of `in` for each linear index of `out_shape` (broadcast strides; 0 on broadcast dims).
struct BroadcastStrides {
  int dim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};
BroadcastStrides broadcast_strides(const Tensor& in, const Tensor& out);
// Calls f(out_index, in_offset...) for every element of out, for up to 3 inputs.
template <typename F>
void for_each_broadcast(const Tensor& out, const Tensor* const* ins, int n, F&& f) {
  int64_t total = out.numel();
  BroadcastStrides bs[3];
  bool simple = true;
  for (int k = 0; k < n; k++) {
    bs[k] = broadcast_strides(*ins[k], out);
    if (ins[k]->numel() != total || !ins[k]->default_dim_order()) simple = false;
  }
  if (simple && out.default_dim_order()) {
    int64_t off[3];
    for (int64_t i = 0; i < total; i++) {
      for (int k = 0; k < n; k++) off[k] = i;
      f(i, off);
    }
    return;
  }
  if (total == 0) return;
  const int D = out.dim;
  if (D == 0) {
    int64_t off[3] = {0, 0, 0};
    f(0, off);
    return;
  }
  // rows of the innermost dim: offsets advance by constant strides along a row and are carried
  // across the outer dims between rows (no per-element index arithmetic)
  const int64_t inner = out.sizes[D - 1], so = out.strides[D - 1];
  int64_t si[3] = {0, 0, 0};
  for (int k = 0; k < n; k++) si[k] = bs[k].strides[D - 1];
  int64_t idx[kMaxDims] = {}, base_o = 0, base[3] = {0, 0, 0}, off[3];
  for (;;) {
    int64_t o = base_o;
    for (int k = 0; k < n; k++) off[k] = base[k];
    for (int64_t j = 0; j < inner; j++) {
      f(o, off);
      o += so;
      for (int k = 0; k < n; k++) off[k] += si[k];
    }
    int d = D - 2;
    for (; d >= 0; d--) {
      base_o += out.strides[d];
      for (int k = 0; k < n; k++) base[k] += bs[k].strides[d];
      if (++idx[d] < out.sizes[d]) break;
      base_o -= out.strides[d] * out.sizes[d];
      for (int k = 0; k < n; k++) base[k] -= bs[k].strides[d] * out.sizes[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// A 0-d tensor holding a Scalar argument, typed like PyTorch's wrapped numbers.
// make_scalar_tensor: the argument's own tensor where it is one, else its scalar in h as such.
struct ScalarHolder {
  std::optional<Tensor> t;  // (made only for a scalar: a Tensor is hundreds of bytes to initialise)
  int64_t storage[1];
};
const Tensor& make_scalar_tensor(const EValue* s, const Tensor& other, ScalarHolder& h);

// Run fn(begin,end) over [0,n) on the runtime's pool when the work is large enough.
inline void parallel(KernelContext& ctx, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (ctx.pool && n > grain) ctx.pool->parallel_for(n, grain, fn);
  else fn(0, n);
}

}  // namespace etnp
