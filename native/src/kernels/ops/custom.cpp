// Bundled custom kernels: etnp::triple.out (the "custom" library, the reference kernel that
// keeps the custom-op wiring tested) and etnp::lstm.out (the "lstm" library).
#include <cmath>
#include <vector>

#include "kernels/ops/elementwise.h"
#include "kernels/compute/gemm.h"

namespace etnp {
namespace {
double triple_d(double x) { return 3.0 * x; }
int64_t triple_i(int64_t x) { return (int64_t)(3 * (uint64_t)x); }
// etnp::triple.out(Tensor x, *, Tensor(a!) out)
void triple_kernel(KernelContext& ctx, EValue** a, size_t) { unary_apply(ctx, tensor_arg(a, 0), tensor_arg(a, 1), triple_d, triple_i); }

float sigm(float v) { return 1.f / (1.f + std::exp(-v)); }

void expect_f32(const Tensor& t, const char* what) {
  if (t.dtype != DType::F32) throw_exec(std::string(what) + ": dtype " + dtype_name(t.dtype) + " is not supported (float32 only)");
}

// Element offset of logical (row-major) index `flat` in `t`, following its strides: programs may
// plan any tensor in a permuted dim order (torch plans a batch-first LSTM's output time-major).
int64_t strided_offset(const Tensor& t, int64_t flat) {
  int64_t off = 0;
  for (int d = t.dim - 1; d >= 0; d--) {
    int64_t n = t.sizes[d] ? t.sizes[d] : 1;
    off += (flat % n) * t.strides[d];
    flat /= n;
  }
  return off;
}

// The tensor's floats in row-major order: its own memory when already contiguous.
const float* row_major(const Tensor& t, std::vector<float>& buf) {
  if (t.default_dim_order()) return t.ptr<float>();
  int64_t n = t.numel();
  buf.resize((size_t)n);
  const float* p = t.ptr<float>();
  for (int64_t i = 0; i < n; i++) buf[(size_t)i] = p[strided_offset(t, i)];
  return buf.data();
}

void store_row_major(Tensor& t, const float* src) {
  if (t.default_dim_order()) {
    std::copy(src, src + t.numel(), t.ptr<float>());
    return;
  }
  float* p = t.ptr<float>();
  for (int64_t i = 0, n = t.numel(); i < n; i++) p[strided_offset(t, i)] = src[i];
}

void expect_shape(const Tensor& t, std::initializer_list<int64_t> s, const char* what) {
  bool ok = t.dim == (int)s.size();
  int k = 0;
  for (int64_t v : s) ok = ok && t.sizes[k++] == v;
  if (!ok) throw_exec(std::string(what) + " has shape " + t.shape_str() + ", which does not fit the LSTM");
}

// etnp::lstm.out(Tensor x, Tensor h0, Tensor c0, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh, *,
//                Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) c_n) -> (Tensor(a!), Tensor(b!), Tensor(c!))
// One batch-first layer with torch.nn.LSTM's gate order (input, forget, cell, output):
// x [B,T,I], h0/c0 [B,H], w_ih [4H,I], w_hh [4H,H], b_* [4H] -> out [B,T,H], h_n/c_n [B,H].
void lstm_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor &x = tensor_arg(a, 0), &h0 = tensor_arg(a, 1), &c0 = tensor_arg(a, 2);
  const Tensor &wih = tensor_arg(a, 3), &whh = tensor_arg(a, 4), &bih = tensor_arg(a, 5), &bhh = tensor_arg(a, 6);
  Tensor &out = tensor_arg(a, 7), &hn = tensor_arg(a, 8), &cn = tensor_arg(a, 9);
  const char* names[] = {"x", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh"};
  const Tensor* ins[] = {&x, &h0, &c0, &wih, &whh, &bih, &bhh};
  for (int k = 0; k < 7; k++) expect_f32(*ins[k], names[k]);
  if (x.dim != 3) throw_exec("x must be [batch, time, features], got " + x.shape_str());
  int64_t B = x.sizes[0], T = x.sizes[1], I = x.sizes[2];
  if (wih.dim != 2 || wih.sizes[0] % 4) throw_exec("w_ih must be [4*hidden, features], got " + wih.shape_str());
  int64_t H = wih.sizes[0] / 4;
  expect_shape(wih, {4 * H, I}, "w_ih");
  expect_shape(whh, {4 * H, H}, "w_hh");
  expect_shape(bih, {4 * H}, "b_ih");
  expect_shape(bhh, {4 * H}, "b_hh");
  expect_shape(h0, {B, H}, "h0");
  expect_shape(c0, {B, H}, "c0");
  resize(out, {B, T, H});
  resize(hn, {B, H});
  resize(cn, {B, H});
  for (Tensor* t : {&out, &hn, &cn}) expect_f32(*t, "output");
  // input projections for every step at once: [B*T, 4H] = x [B*T, I] . w_ih^T
  std::vector<float> bufs[7];
  const float* p[7];
  for (int k = 0; k < 7; k++) p[k] = row_major(*ins[k], bufs[k]);
  std::vector<float> xw((size_t)(B * T * 4 * H)), g((size_t)(4 * H)), y((size_t)(B * T * H));
  sgemm(ctx.pool, B * T, 4 * H, I, p[0], I, 1, p[3], 1, I, xw.data(), 4 * H);
  std::vector<float> h(p[1], p[1] + B * H), c(p[2], p[2] + B * H);
  const float *W = p[4], *b1 = p[5], *b2 = p[6];
  for (int64_t t = 0; t < T; t++)
    for (int64_t b = 0; b < B; b++) {
      const float* xr = &xw[(size_t)((b * T + t) * 4 * H)];
      float* hb = &h[(size_t)(b * H)];
      for (int64_t r = 0; r < 4 * H; r++) {
        const float* wr = W + r * H;
        float s = xr[r] + b1[r] + b2[r];
        for (int64_t k = 0; k < H; k++) s += wr[k] * hb[k];
        g[(size_t)r] = s;
      }
      float* cb = &c[(size_t)(b * H)];
      float* o = &y[(size_t)((b * T + t) * H)];
      for (int64_t k = 0; k < H; k++) {
        float ig = sigm(g[k]), fg = sigm(g[H + k]), cg = std::tanh(g[2 * H + k]), og = sigm(g[3 * H + k]);
        cb[k] = fg * cb[k] + ig * cg;
        hb[k] = og * std::tanh(cb[k]);
        o[k] = hb[k];
      }
    }
  store_row_major(out, y.data());
  store_row_major(hn, h.data());
  store_row_major(cn, c.data());
}
}  // namespace

void register_custom_kernels(KernelRegistry& r) {
  r.add("etnp::triple.out", &triple_kernel, "custom", 2);
  r.add("etnp::lstm.out", &lstm_kernel, "lstm", 10);
}

}  // namespace etnp
