// Matrix kernels: mm, bmm, addmm, linear, baddbmm. float32 goes through the packed
// SGEMM; other dtypes through a reference loop accumulating in double.
#include "kernels/compute/gemm.h"
#include "kernels/kernel_util.h"

namespace etnp {
namespace {

// A view of a 2-D (or batched) matrix operand with element strides.
struct Mat {
  const Tensor* t;
  int64_t rows, cols, rs, cs, bs;  // bs: batch stride (0 = broadcast)
};
Mat mat_of(const Tensor& t, bool batched) {
  int r = batched ? 1 : 0;
  if (t.dim != r + 2) throw_exec("expected a " + std::to_string(r + 2) + "-D matrix, got shape " + t.shape_str());
  return Mat{&t, t.sizes[r], t.sizes[r + 1], t.strides[r], t.strides[r + 1], batched ? t.strides[0] : 0};
}

// out[b] = beta * bias[b] + alpha * (a[b] @ b[b]); bias broadcasts to [M, N] (or null); bias[b]
// starts `bias_bs` elements after bias[b-1] (0: the same bias for every batch).
void matmul(KernelContext& ctx, const Mat& a, const Mat& b, Tensor& out, int64_t batch, const Tensor* bias0,
            double alpha, double beta, int64_t bias_bs = 0) {
  const Tensor* bias = bias0;
  if (a.cols != b.rows)
    throw_exec("matrix shapes do not match: " + a.t->shape_str() + " @ " + b.t->shape_str());
  int64_t M = a.rows, N = b.cols, K = a.cols;
  if (batch > 1 || out.dim == 3) resize(out, {batch, M, N});
  else resize(out, {M, N});
  check_contiguous(out, "matmul output");
  DType dt = out.dtype;
  bool f32 = dt == DType::F32 && a.t->dtype == DType::F32 && b.t->dtype == DType::F32 &&
             (!bias || bias->dtype == DType::F32);
  BroadcastStrides bb{};
  Tensor mn;
  if (bias) {
    mn.dim = 2; mn.sizes[0] = M; mn.sizes[1] = N; mn.compute_strides();
    bb = broadcast_strides(*bias, mn);
  }
  Tensor bias_slice;
  for (int64_t bi = 0; bi < batch; bi++) {
    if (bias0 && bias_bs) {
      bias_slice = *bias0;
      bias_slice.data = static_cast<char*>(bias0->data) + (size_t)(bi * bias_bs) * bias0->elem_size();
      bias = &bias_slice;
    }
    if (f32 && alpha == 1.0) {
      const float* A = a.t->ptr<float>() + bi * a.bs;
      const float* B = b.t->ptr<float>() + bi * b.bs;
      float* C = out.ptr<float>() + bi * M * N;
      GemmEpilogue ep;
      bool row_bias = bias && bb.strides[1] == 0 && beta == 1.0, col_bias = bias && bb.strides[0] == 0 && beta == 1.0;
      if (bias && bias->numel() == N && col_bias) ep.bias_col = bias->ptr<float>();
      else if (bias && bias->numel() == M && row_bias && M != 1) ep.bias_row = bias->ptr<float>();
      else if (bias) {  // general bias: write beta*bias first, then accumulate
        const float* bp = bias->ptr<float>();
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++) C[i * N + j] = (float)(beta * bp[i * bb.strides[0] + j * bb.strides[1]]);
        ep.accumulate = true;
      }
      sgemm(ctx.pool, M, N, K, A, a.rs, a.cs, B, b.rs, b.cs, C, N, ep);
      continue;
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += load_f64(a.t->data, a.t->dtype, bi * a.bs + i * a.rs + k * a.cs) *
               load_f64(b.t->data, b.t->dtype, bi * b.bs + k * b.rs + j * b.cs);
        s *= alpha;
        if (bias) s += beta * load_f64(bias->data, bias->dtype, i * bb.strides[0] + j * bb.strides[1]);
        int64_t o = (bi * M + i) * N + j;
        if (is_floating(dt)) store_f64(out.data, dt, o, s);
        else store_i64(out.data, dt, o, f2i(std::nearbyint(s)));
      }
  }
}

// mm.out(self, mat2, out)
void mm_kernel(KernelContext& ctx, EValue** a, size_t) {
  matmul(ctx, mat_of(tensor_arg(a, 0), false), mat_of(tensor_arg(a, 1), false), tensor_arg(a, 2), 1, nullptr, 1, 0);
}
// bmm.out(self, mat2, out)
void bmm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &y = tensor_arg(a, 1);
  Mat ma = mat_of(x, true), mb = mat_of(y, true);
  if (x.sizes[0] != y.sizes[0]) throw_exec("bmm: batch sizes differ");
  matmul(ctx, ma, mb, tensor_arg(a, 2), x.sizes[0], nullptr, 1, 0);
}
// addmm.out(self, mat1, mat2, beta, alpha, out)
void addmm_kernel(KernelContext& ctx, EValue** a, size_t) {
  matmul(ctx, mat_of(tensor_arg(a, 1), false), mat_of(tensor_arg(a, 2), false), tensor_arg(a, 5), 1,
         &tensor_arg(a, 0), double_arg(a, 4), double_arg(a, 3));
}
// baddbmm.out(self, batch1, batch2, beta, alpha, out)
void baddbmm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 1), &y = tensor_arg(a, 2), &bias = tensor_arg(a, 0);
  if (x.dim != 3 || y.dim != 3 || x.sizes[0] != y.sizes[0]) throw_exec("baddbmm: batch1 and batch2 must be 3-D with equal batch sizes");
  if (bias.dim > 3) throw_exec("baddbmm: bias of shape " + bias.shape_str() + " does not broadcast to the batch");
  Tensor b2 = bias;
  int64_t bias_bs = 0;
  if (b2.dim == 3) {  // a per-batch bias, or one broadcast over the batch
    if (bias.sizes[0] != 1 && bias.sizes[0] != x.sizes[0])
      throw_exec("baddbmm: bias of shape " + bias.shape_str() + " does not broadcast to the batch");
    bias_bs = bias.sizes[0] == 1 ? 0 : bias.strides[0];
    b2.dim = 2;
    for (int i = 0; i < 2; i++) { b2.sizes[i] = bias.sizes[i + 1]; b2.strides[i] = bias.strides[i + 1]; }
  }
  matmul(ctx, mat_of(x, true), mat_of(y, true), tensor_arg(a, 5), x.sizes[0], &b2, double_arg(a, 4), double_arg(a, 3),
         bias_bs);
}
// linear.out(input, weight, bias?, out): input [..., K], weight [N, K]
void linear_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &w = tensor_arg(a, 1);
  Tensor* bias = opt_tensor_arg(a, 2);
  Tensor& out = tensor_arg(a, 3);
  check_contiguous(x, "linear input");
  if (x.dim < 1 || w.dim != 2 || x.sizes[x.dim - 1] != w.sizes[1]) throw_exec("linear: shapes do not match");
  int64_t M = x.numel() / std::max<int64_t>(1, x.sizes[x.dim - 1]);
  Tensor x2 = x;
  x2.dim = 2; x2.sizes[0] = M; x2.sizes[1] = x.sizes[x.dim - 1]; x2.compute_strides();
  Mat wt{&w, w.sizes[1], w.sizes[0], w.strides[1], w.strides[0], 0};  // weight^T
  auto s = shape_of(x);
  s.back() = w.sizes[0];
  resize(out, s);
  Tensor o2 = out;
  o2.dim = 2; o2.sizes[0] = M; o2.sizes[1] = w.sizes[0]; o2.compute_strides(); o2.dynamism = Dynamism::Bound;
  matmul(ctx, mat_of(x2, false), wt, o2, 1, bias, 1, 1);
}

}  // namespace

void register_linear_kernels(KernelRegistry& r) {
  r.add("aten::mm.out", &mm_kernel, "optimized", 3);
  r.add("aten::bmm.out", &bmm_kernel, "optimized", 3);
  r.add("aten::addmm.out", &addmm_kernel, "optimized", 6);
  r.add("aten::baddbmm.out", &baddbmm_kernel, "optimized", 6);
  r.add("aten::linear.out", &linear_kernel, "optimized", 4);
}

}  // namespace etnp
