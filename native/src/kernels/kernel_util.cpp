#include "kernels/kernel_util.h"
#include "util/compiler.h"

namespace etnp {

namespace {
// Calls add(value) for each int of argument i (an int list, one int, or None: nothing), checked.
template <class Add>
void each_int(KernelContext& ctx, EValue** a, int i, Add add) {
  const EValue* v = a[i];
  if (v->tag == Tag::None) return;
  if (v->tag == Tag::Int) return add(v->i);
  if (v->tag != Tag::IntList) throw_exec("argument " + std::to_string(i) + ": expected an int list, got " + tag_name(v->tag));
  for (int64_t idx : v->items) {
    if (idx < 0 || (size_t)idx >= ctx.num_values) throw_exec("int list item out of range");
    const EValue& e = ctx.values[idx];
    if (e.tag != Tag::Int) throw_exec("int list holds a non-int");
    add(e.i);
  }
}
}  // namespace

std::vector<int64_t> int_list_arg(KernelContext& ctx, EValue** a, int i) {
  std::vector<int64_t> out;
  if (a[i]->tag == Tag::IntList) out.reserve(a[i]->items.size());
  each_int(ctx, a, i, [&](int64_t x) { out.push_back(x); });
  return out;
}

void int_list_into(KernelContext& ctx, EValue** a, int i, Dims& out) {
  out.n = 0;
  each_int(ctx, a, i, [&](int64_t x) { out.push(x); });
}

std::vector<Tensor*> tensor_list_arg(KernelContext& ctx, EValue** a, int i, bool allow_none) {
  const EValue* v = a[i];
  if (v->tag != Tag::TensorList && v->tag != Tag::OptTensorList)
    throw_exec("argument " + std::to_string(i) + ": expected a tensor list, got " + tag_name(v->tag));
  std::vector<Tensor*> out;
  for (int64_t idx : v->items) {
    if (idx < 0 || ctx.values[idx].tag == Tag::None) {
      if (!allow_none) throw_exec("tensor list holds None");
      out.push_back(nullptr);
      continue;
    }
    if ((size_t)idx >= ctx.num_values || ctx.values[idx].tag != Tag::Tensor) throw_exec("tensor list holds a non-tensor");
    out.push_back(&ctx.values[idx].t);
  }
  return out;
}

void view_shape_in_place(const Tensor& x, Dims& s) {
  int64_t known = 1, infer = -1;
  for (int i = 0; i < s.n; i++) {
    if (s[i] == -1) {
      if (infer >= 0) throw_exec("view: only one dimension can be inferred");
      infer = i;
    } else if (s[i] < 0 || etnp::mul_overflow(known, s[i], &known)) {
      throw_exec("view: invalid size");
    }
  }
  if (infer >= 0) s[(int)infer] = known ? x.numel() / known : 0;
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  if (n != x.numel())
    throw_exec("view: shape of " + std::to_string(n) + " elements is invalid for input " + x.shape_str());
}

std::vector<int64_t> broadcast_shapes(const Tensor& a, const Tensor& b) {
  int64_t s[kMaxDims];
  const int n = broadcast_shape_into(a, b, s);
  return std::vector<int64_t>(s, s + n);
}

int broadcast_shape_into(const Tensor& a, const Tensor& b, int64_t* out) {
  int n = std::max(a.dim, b.dim);
  for (int i = 0; i < n; i++) {
    int ia = a.dim - n + i, ib = b.dim - n + i;
    int64_t sa = ia >= 0 ? a.sizes[ia] : 1, sb = ib >= 0 ? b.sizes[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      throw_exec("shapes " + a.shape_str() + " and " + b.shape_str() + " cannot be broadcast");
    out[i] = sa == 1 ? sb : sa;
  }
  return n;
}

BroadcastStrides broadcast_strides(const Tensor& in, const Tensor& out) {
  BroadcastStrides r;
  r.dim = out.dim;
  if (in.dim > out.dim) throw_exec("input of shape " + in.shape_str() + " does not broadcast to " + out.shape_str());
  for (int d = 0; d < out.dim; d++) {
    int k = in.dim - out.dim + d;
    int64_t s = k >= 0 ? in.sizes[k] : 1;
    if (s != out.sizes[d] && s != 1)
      throw_exec("input of shape " + in.shape_str() + " does not broadcast to " + out.shape_str());
    r.sizes[d] = s;
    r.strides[d] = (k >= 0 && s != 1) ? in.strides[k] : 0;
  }
  return r;
}

const Tensor& make_scalar_tensor(const EValue* s, const Tensor& other, ScalarHolder& h) {
  if (s->tag == Tag::Tensor) return s->t;  // (its own: a Tensor is hundreds of bytes to copy)
  Tensor& t = h.t.emplace();
  t.dim = 0;
  t.data = h.storage;
  t.capacity = sizeof(h.storage);
  if (s->tag == Tag::Double) {
    // float32/float64 tensors take the scalar in their own type; half types compute in float.
    t.dtype = other.dtype == DType::F64 ? DType::F64 : is_floating(other.dtype) ? DType::F32 : DType::F64;
    store_f64(t.data, t.dtype, 0, s->d);
  } else if (s->tag == Tag::Int || s->tag == Tag::Bool) {
    if (s->tag == Tag::Bool && other.dtype == DType::Bool) t.dtype = DType::Bool;
    else t.dtype = is_floating(other.dtype) ? other.dtype : DType::I64;
    store_i64(t.data, t.dtype, 0, s->i);
  } else {
    throw_exec(std::string("expected a scalar, got ") + tag_name(s->tag));
  }
  return t;
}

}  // namespace etnp
