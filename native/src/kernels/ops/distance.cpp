// Pairwise distances: _cdist_forward (between the rows of two batched matrices) and
// _pdist_forward (between the rows of one matrix, upper triangle in row-major order).
// p = 0 counts differing coordinates, p = inf takes the largest difference.
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

double p_distance(const Tensor& x, int64_t xo, int64_t xs, const Tensor& y, int64_t yo, int64_t ys, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; k++) {
    double d = std::fabs(load_f64(x.data, x.dtype, xo + k * xs) - load_f64(y.data, y.dtype, yo + k * ys));
    if (p == 0) acc += d != 0;
    else if (std::isinf(p)) acc = std::max(acc, d);
    else if (p == 1) acc += d;
    else if (p == 2) acc += d * d;
    else acc += std::pow(d, p);
  }
  if (p == 0 || p == 1 || std::isinf(p)) return acc;
  return p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
}
void check_p(double p, const char* op) {
  if (!(p >= 0)) throw_exec(std::string(op) + ": p must be non-negative");
}
void check_float(const Tensor& t, const char* op) {
  if (!is_floating(t.dtype)) throw_exec(std::string(op) + ": dtype " + dtype_name(t.dtype) + " is not floating point");
}

// _cdist_forward.out(x1, x2, p, compute_mode?, out): [..., P, M] x [..., R, M] -> [..., P, R],
// batch dims broadcast.
void cdist_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &y = tensor_arg(a, 1);
  double p = double_arg(a, 2);
  Tensor& out = tensor_arg(a, 4);
  check_p(p, "cdist");
  check_float(x, "cdist");
  if (y.dtype != x.dtype || out.dtype != x.dtype) throw_exec("cdist: x1, x2 and out must share a dtype");
  if (x.dim < 2 || y.dim < 2) throw_exec("cdist: inputs must have at least 2 dims");
  int64_t P = x.sizes[x.dim - 2], R = y.sizes[y.dim - 2], M = x.sizes[x.dim - 1];
  if (y.sizes[y.dim - 1] != M) throw_exec("cdist: x1 and x2 must have the same number of columns");
  Tensor xb = x, yb = y;  // the batch dims only
  xb.dim = x.dim - 2;
  yb.dim = y.dim - 2;
  auto batch = broadcast_shapes(xb, yb);
  std::vector<int64_t> s = batch;
  s.push_back(P);
  s.push_back(R);
  resize(out, s);
  check_contiguous(out, "cdist output");
  Tensor bshape;
  bshape.dim = (int)batch.size();
  for (int k = 0; k < bshape.dim; k++) bshape.sizes[k] = batch[k];
  bshape.compute_strides();
  BroadcastStrides bx = broadcast_strides(xb, bshape), by = broadcast_strides(yb, bshape);
  int64_t nb = bshape.numel();
  const int64_t xr = x.strides[x.dim - 2], xc = x.strides[x.dim - 1], yr = y.strides[y.dim - 2], yc = y.strides[y.dim - 1];
  parallel(ctx, nb * P, 4, [&](int64_t b0, int64_t b1) {
    for (int64_t bp = b0; bp < b1; bp++) {
      int64_t b = bp / P, i = bp % P, rem = b, xo = 0, yo = 0;
      for (int k = bshape.dim - 1; k >= 0; k--) {
        int64_t c = rem % bshape.sizes[k];
        rem /= bshape.sizes[k];
        xo += c * bx.strides[k];
        yo += c * by.strides[k];
      }
      for (int64_t j = 0; j < R; j++)
        store_f64(out.data, out.dtype, (b * P + i) * R + j, p_distance(x, xo + i * xr, xc, y, yo + j * yr, yc, M, p));
    }
  });
}

// _pdist_forward.out(self, p, out): [N, M] -> [N * (N - 1) / 2].
void pdist_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  double p = double_arg(a, 1);
  Tensor& out = tensor_arg(a, 2);
  check_p(p, "pdist");
  check_float(x, "pdist");
  if (out.dtype != x.dtype) throw_exec("pdist: output dtype does not match the input's");
  if (x.dim != 2) throw_exec("pdist: input must be 2-D");
  int64_t N = x.sizes[0], M = x.sizes[1];
  resize(out, {N > 1 ? N * (N - 1) / 2 : 0});
  int64_t k = 0;
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = i + 1; j < N; j++)
      store_f64(out.data, out.dtype, k++, p_distance(x, i * x.strides[0], x.strides[1], x, j * x.strides[0], x.strides[1], M, p));
}

}  // namespace

void register_distance_kernels(KernelRegistry& r) {
  r.add("aten::_cdist_forward.out", &cdist_kernel, "portable", 5);
  r.add("aten::_pdist_forward.out", &pdist_kernel, "portable", 3);
}

}  // namespace etnp
