// Scalar-valued kernels: executorch_prim:: ceil/round/trunc/sym_float/sym_max/sym_min on
// symbolic sizes, aten::_local_scalar_dense (a one-element tensor's value, as from .item()),
// and executorch_prim::et_copy_index (the row writes of a torch map loop).
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

void set_int(EValue* out, int64_t v) { out->tag = Tag::Int; out->i = v; }
void set_double(EValue* out, double v) { out->tag = Tag::Double; out->d = v; }

// A double that must become a Python int (a size): NaN and out-of-range values are errors.
int64_t to_int(double v, const char* op) {
  if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18))
    throw_exec(std::string(op) + ": " + std::to_string(v) + " cannot be converted to an int");
  return (int64_t)v;
}
const EValue* scalar(EValue** a, int i, const char* op) {
  if (!is_scalar(a[i])) throw_exec(std::string(op) + ": expected a scalar, got " + tag_name(a[i]->tag));
  return a[i];
}

// ceil.Scalar / trunc.Scalar / round.Scalar (a, out): a float becomes an int; ints pass through.
void ceil_kernel(KernelContext&, EValue** a, size_t) {
  const EValue* v = scalar(a, 0, "ceil");
  set_int(a[1], v->tag == Tag::Double ? to_int(std::ceil(v->d), "ceil") : v->i);
}
void trunc_kernel(KernelContext&, EValue** a, size_t) {
  const EValue* v = scalar(a, 0, "trunc");
  set_int(a[1], v->tag == Tag::Double ? to_int(std::trunc(v->d), "trunc") : v->i);
}
// Python's round(): halves go to the even neighbour.
void round_kernel(KernelContext&, EValue** a, size_t) {
  const EValue* v = scalar(a, 0, "round");
  if (v->tag != Tag::Double) return set_int(a[1], v->i);
  double r = std::round(v->d);
  if (std::fabs(r - v->d) == 0.5 && std::fmod(r, 2.0) != 0.0) r -= (r > v->d ? 1.0 : -1.0);
  set_int(a[1], to_int(r, "round"));
}
// sym_float.Scalar(a, out)
void sym_float_kernel(KernelContext&, EValue** a, size_t) {
  const EValue* v = scalar(a, 0, "sym_float");
  set_double(a[1], v->tag == Tag::Double ? v->d : (double)v->i);
}
// sym_max.Scalar / sym_min.Scalar (a, b, out): ints stay ints; a float operand gives a float.
template <bool MAX>
void sym_minmax_kernel(KernelContext&, EValue** a, size_t) {
  const EValue *x = scalar(a, 0, MAX ? "sym_max" : "sym_min"), *y = scalar(a, 1, MAX ? "sym_max" : "sym_min");
  if (x->tag != Tag::Double && y->tag != Tag::Double) return set_int(a[2], MAX ? std::max(x->i, y->i) : std::min(x->i, y->i));
  double u = double_arg(a, 0), w = double_arg(a, 1);
  set_double(a[2], MAX ? std::max(u, w) : std::min(u, w));
}

// aten::_local_scalar_dense(self, out): Double for floating tensors, Bool for bool, Int otherwise.
void local_scalar_dense_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& t = tensor_arg(a, 0);
  if (t.numel() != 1)
    throw_exec("_local_scalar_dense: a tensor with " + std::to_string(t.numel()) + " elements cannot be converted to a scalar");
  if (is_complex(t.dtype)) throw_exec("_local_scalar_dense: complex tensors have no scalar value here");
  EValue* out = a[1];
  if (is_floating(t.dtype)) return set_double(out, load_f64(t.data, t.dtype, 0));
  out->tag = t.dtype == DType::Bool ? Tag::Bool : Tag::Int;
  out->i = load_i64(t.data, t.dtype, 0);
}

// executorch_prim::et_copy_index.tensor(copy_to, copy_from, index): copy_from becomes row
// `index` of copy_to, which grows (within its memory) to index + 1 rows when it has fewer.
void et_copy_index_kernel(KernelContext&, EValue** a, size_t) {
  Tensor& to = tensor_arg(a, 0);
  const Tensor& from = tensor_arg(a, 1);
  int64_t index = int_arg(a, 2);
  check_writable(to, "et_copy_index");
  if (to.dim != from.dim + 1) throw_exec("et_copy_index: copy_to must have one more dim than copy_from");
  if (to.dtype != from.dtype)
    throw_exec(std::string("et_copy_index: dtypes differ (") + dtype_name(to.dtype) + " vs " + dtype_name(from.dtype) + ")");
  if (index < 0) throw_exec("et_copy_index: negative index " + std::to_string(index));
  check_contiguous(to, "et_copy_index copy_to");
  check_contiguous(from, "et_copy_index copy_from");
  bool same_rows = true;
  for (int i = 0; i < from.dim; i++) same_rows = same_rows && to.sizes[i + 1] == from.sizes[i];
  if (!same_rows && index > 0) throw_exec("et_copy_index: copy_from " + from.shape_str() + " does not match the rows of " + to.shape_str());
  if (!same_rows || to.sizes[0] < index + 1) {
    std::vector<int64_t> s{std::max<int64_t>(index + 1, same_rows ? to.sizes[0] : 0)};
    for (int i = 0; i < from.dim; i++) s.push_back(from.sizes[i]);
    resize(to, s);
  }
  size_t row = from.nbytes();
  if ((size_t)(index + 1) * row > to.capacity) throw_exec("et_copy_index: row is past copy_to's memory");
  if (row) std::memmove((uint8_t*)to.data + (size_t)index * row, from.data, row);
}

}  // namespace

void register_scalar_kernels(KernelRegistry& r) {
  const char* P = "prim";
  r.add("executorch_prim::ceil.Scalar", &ceil_kernel, P, 2);
  r.add("executorch_prim::round.Scalar", &round_kernel, P, 2);
  r.add("executorch_prim::trunc.Scalar", &trunc_kernel, P, 2);
  r.add("executorch_prim::sym_float.Scalar", &sym_float_kernel, P, 2);
  r.add("executorch_prim::sym_max.Scalar", &sym_minmax_kernel<true>, P, 3);
  r.add("executorch_prim::sym_min.Scalar", &sym_minmax_kernel<false>, P, 3);
  r.add("executorch_prim::et_copy_index.tensor", &et_copy_index_kernel, P, 3);
  r.add("aten::_local_scalar_dense", &local_scalar_dense_kernel, "portable", 2);
}

}  // namespace etnp
