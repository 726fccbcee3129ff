// Copies of strided views of the input: as_strided_copy, diagonal_copy, unfold_copy,
// pixel_shuffle / pixel_unshuffle, and repeat_interleave (the index list of repeated positions).
#include <vector>

#include "kernels/ops/copy_util.h"
#include "util/compiler.h"

namespace etnp {
namespace {

void check_out(const Tensor& out, DType want, const char* op) {
  if (out.dtype != want)
    throw_exec(std::string(op) + ": output dtype " + dtype_name(out.dtype) + " does not match the input's " + dtype_name(want));
}
std::vector<int64_t> sizes_of(const View& v) { return std::vector<int64_t>(v.sizes, v.sizes + v.dim); }

// as_strided_copy.out(self, size, stride, storage_offset?, out): strides over self's elements
// (in their memory order); every position must fall inside self.
void as_strided_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto size = int_list_arg(ctx, a, 1), stride = int_list_arg(ctx, a, 2);
  int64_t off = opt_present(a, 3) ? int_arg(a, 3) : 0;
  Tensor& out = tensor_arg(a, 4);
  check_out(out, x.dtype, "as_strided_copy");
  if (size.size() != stride.size()) throw_exec("as_strided_copy: size and stride lists differ in length");
  if ((int)size.size() > kMaxDims) throw_exec("as_strided_copy: too many dims");
  if (off < 0) throw_exec("as_strided_copy: negative storage offset");
  View v = view_of(x);
  v.dim = (int)size.size();
  v.offset = off;
  int64_t last = off, n = 1;
  for (int k = 0; k < v.dim; k++) {
    if (size[k] < 0 || stride[k] < 0) throw_exec("as_strided_copy: negative size or stride");
    v.sizes[k] = size[k];
    v.strides[k] = stride[k];
    n *= size[k];
    int64_t span = 0;
    if (size[k] > 0 && (etnp::mul_overflow(size[k] - 1, stride[k], &span) || etnp::add_overflow(last, span, &last)))
      throw_exec("as_strided_copy: view is too large");
  }
  if (n > 0 && last >= x.numel())
    throw_exec("as_strided_copy: the view reaches element " + std::to_string(last) + " of an input with " + std::to_string(x.numel()));
  resize(out, size);
  copy_view(v, out);
}

// diagonal_copy.out(self, offset, dim1, dim2, out): the diagonal becomes the last dim.
void diagonal_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int64_t offset = int_arg(a, 1);
  if (x.dim < 2) throw_exec("diagonal_copy: input must have at least 2 dims");
  int d1 = (int)wrap_dim(int_arg(a, 2), x.dim), d2 = (int)wrap_dim(int_arg(a, 3), x.dim);
  if (d1 == d2) throw_exec("diagonal_copy: dim1 and dim2 must differ");
  Tensor& out = tensor_arg(a, 4);
  check_out(out, x.dtype, "diagonal_copy");
  // (the start only for a non-empty diagonal: then |offset| < the dim's size, so it stays inside
  // the tensor; any int64 offset may come in - a far one gives an empty diagonal)
  int64_t s1 = x.sizes[d1], s2 = x.sizes[d2], len, start = 0;
  if (offset >= 0) {
    len = std::max<int64_t>(0, std::min(s1, s2 - offset));
    if (len) start = offset * x.strides[d2];
  } else {
    len = std::max<int64_t>(0, std::min(s1 + offset, s2));
    if (len) start = -offset * x.strides[d1];
  }
  View v = view_of(x);
  v.dim = 0;
  for (int k = 0; k < x.dim; k++)
    if (k != d1 && k != d2) { v.sizes[v.dim] = x.sizes[k]; v.strides[v.dim++] = x.strides[k]; }
  v.sizes[v.dim] = len;
  v.strides[v.dim++] = x.strides[d1] + x.strides[d2];
  v.offset = len ? start : 0;
  resize(out, sizes_of(v));
  copy_view(v, out);
}

// unfold_copy.out(self, dimension, size, step, out): windows of `size` every `step` along a dim,
// the window as a new last dim.
void unfold_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  int d = (int)wrap_dim(int_arg(a, 1), x.dim);
  int64_t size = int_arg(a, 2), step = int_arg(a, 3);
  Tensor& out = tensor_arg(a, 4);
  check_out(out, x.dtype, "unfold_copy");
  int64_t n = x.dim ? x.sizes[d] : 1, st = x.dim ? x.strides[d] : 1;
  if (step <= 0) throw_exec("unfold_copy: step must be positive");
  if (size < 0 || size > n) throw_exec("unfold_copy: size " + std::to_string(size) + " exceeds the dim's " + std::to_string(n));
  if (x.dim + 1 > kMaxDims) throw_exec("unfold_copy: too many dims");
  View v = view_of(x);
  if (x.dim == 0) { v.dim = 1; v.sizes[0] = size; v.strides[0] = 1; }
  else {
    v.sizes[d] = (n - size) / step + 1;
    v.strides[d] = st * step;
    v.sizes[v.dim] = size;
    v.strides[v.dim++] = st;
  }
  resize(out, sizes_of(v));
  copy_view(v, out);
}

// pixel_shuffle.out(self, r, out): [..., C*r*r, H, W] -> [..., C, H*r, W*r];
// pixel_unshuffle.out(self, r, out) is its inverse. Both read the input through a 6-d view
// whose order is the output's memory order.
template <bool SHUFFLE>
void pixel_kernel(KernelContext&, EValue** a, size_t) {
  const char* op = SHUFFLE ? "pixel_shuffle" : "pixel_unshuffle";
  const Tensor& x = tensor_arg(a, 0);
  int64_t r = int_arg(a, 1);
  Tensor& out = tensor_arg(a, 2);
  check_out(out, x.dtype, op);
  if (x.dim < 3) throw_exec(std::string(op) + ": input must have at least 3 dims");
  if (r <= 0) throw_exec(std::string(op) + ": the factor must be positive");
  if (x.dim + 2 > kMaxDims) throw_exec(std::string(op) + ": too many dims");
  int b = x.dim - 3;
  int64_t C = x.sizes[b], H = x.sizes[b + 1], W = x.sizes[b + 2];
  int64_t cs = x.strides[b], hs = x.strides[b + 1], ws = x.strides[b + 2];
  std::vector<int64_t> os(x.sizes, x.sizes + b);
  View v = view_of(x);
  v.dim = b + 5;
  auto put = [&](int k, int64_t size, int64_t stride) { v.sizes[b + k] = size; v.strides[b + k] = stride; };
  // every product of a size or stride with the factor, checked (a program may give any factor)
  auto times = [&](int64_t x, int64_t y) {
    int64_t p = 0;
    if (etnp::mul_overflow(x, y, &p)) throw_exec(std::string(op) + ": the factor " + std::to_string(r) + " is too large");
    return p;
  };
  const int64_t rr = times(r, r);
  if (SHUFFLE) {
    if (C % rr) throw_exec("pixel_shuffle: channels " + std::to_string(C) + " are not divisible by the factor squared");
    int64_t c = C / rr;
    put(0, c, times(cs, rr)); put(1, H, hs); put(2, r, times(cs, r)); put(3, W, ws); put(4, r, cs);
    os.insert(os.end(), {c, times(H, r), times(W, r)});
  } else {
    if (H % r || W % r) throw_exec("pixel_unshuffle: height and width must be divisible by the factor");
    int64_t h = H / r, w = W / r;
    put(0, C, cs); put(1, r, hs); put(2, r, ws); put(3, h, times(hs, r)); put(4, w, times(ws, r));
    os.insert(os.end(), {times(C, rr), h, w});
  }
  resize(out, os);
  check_contiguous(out, op);
  int64_t dst[kMaxDims], s = 1;
  for (int k = v.dim - 1; k >= 0; k--) { dst[k] = s; s *= v.sizes[k]; }
  copy_view(v, out, 0, dst);
}

// repeat_interleave.Tensor_out(repeats, output_size?, out): index i repeated repeats[i] times.
void repeat_interleave_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& rep = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 2);
  if (rep.dtype != DType::I32 && rep.dtype != DType::I64) throw_exec("repeat_interleave: repeats must be int32 or int64");
  check_out(out, rep.dtype, "repeat_interleave");
  if (rep.dim > 1) throw_exec("repeat_interleave: repeats must be 0-d or 1-d");
  View v = view_of(rep);
  int64_t n = rep.numel(), total = 0;
  int64_t st = rep.dim ? v.strides[0] : 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = load_i64(rep.data, rep.dtype, i * st);
    if (k < 0) throw_exec("repeat_interleave: repeats must be non-negative");
    if (etnp::add_overflow(total, k, &total)) throw_exec("repeat_interleave: total is too large");
  }
  if (opt_present(a, 1) && int_arg(a, 1) != total)
    throw_exec("repeat_interleave: output_size " + std::to_string(int_arg(a, 1)) + " does not match the repeats' sum " + std::to_string(total));
  resize(out, {total});
  int64_t o = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = load_i64(rep.data, rep.dtype, i * st); k > 0; k--) store_i64(out.data, out.dtype, o++, i);
}

}  // namespace

void register_strided_copy_kernels(KernelRegistry& r) {
  const char* P = "portable";
  r.add("aten::as_strided_copy.out", &as_strided_kernel, P, 5);
  r.add("aten::diagonal_copy.out", &diagonal_kernel, P, 5);
  r.add("aten::unfold_copy.out", &unfold_kernel, P, 5);
  r.add("aten::pixel_shuffle.out", &pixel_kernel<true>, P, 3);
  r.add("aten::pixel_unshuffle.out", &pixel_kernel<false>, P, 3);
  r.add("aten::repeat_interleave.Tensor_out", &repeat_interleave_kernel, P, 3);
}

}  // namespace etnp
