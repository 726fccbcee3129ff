// Complex tensors: _fft_r2c (real -> complex DFT over some dims, optionally one-sided),
// _fft_c2r (the inverse of a one-sided spectrum back to real), _conj_physical and
// view_as_real_copy. Transforms run in double: radix-2 for power-of-two lengths, a direct DFT
// otherwise. normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n (n = the signal's element count).
#include <complex>
#include <vector>

#include "kernels/kernel_util.h"

namespace etnp {
namespace {

using cd = std::complex<double>;

DType complex_of(DType real) { return real == DType::F64 ? DType::C128 : DType::C64; }
DType real_of(DType c) { return c == DType::C128 ? DType::F64 : DType::F32; }
cd load_c(const Tensor& t, int64_t i) {
  if (t.dtype == DType::C64) { const float* p = (const float*)t.data + 2 * i; return cd(p[0], p[1]); }
  const double* p = (const double*)t.data + 2 * i;
  return cd(p[0], p[1]);
}
void store_c(Tensor& t, int64_t i, cd v) {
  if (t.dtype == DType::C64) { float* p = (float*)t.data + 2 * i; p[0] = (float)v.real(); p[1] = (float)v.imag(); return; }
  double* p = (double*)t.data + 2 * i;
  p[0] = v.real();
  p[1] = v.imag();
}

// In-place DFT of n values; sign -1 forward, +1 inverse (unnormalised).
void dft(std::vector<cd>& v, int sign, std::vector<cd>& scratch) {
  size_t n = v.size();
  if (n <= 1) return;
  const double pi = 3.14159265358979323846;
  if ((n & (n - 1)) == 0) {
    for (size_t i = 1, j = 0; i < n; i++) {  // bit reversal
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(v[i], v[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      double ang = sign * 2 * pi / (double)len;
      for (size_t i = 0; i < n; i += len)
        for (size_t k = 0; k < len / 2; k++) {
          cd w = std::polar(1.0, ang * (double)k), u = v[i + k], t = v[i + k + len / 2] * w;
          v[i + k] = u + t;
          v[i + k + len / 2] = u - t;
        }
    }
    return;
  }
  scratch.assign(n, cd(0, 0));
  for (size_t k = 0; k < n; k++) {
    cd acc(0, 0);
    for (size_t t = 0; t < n; t++) acc += v[t] * std::polar(1.0, sign * 2 * pi * (double)((k * t) % n) / (double)n);
    scratch[k] = acc;
  }
  v.swap(scratch);
}
// Transforms every line of a contiguous complex buffer of `shape` along dim d.
void transform_dim(std::vector<cd>& buf, const std::vector<int64_t>& shape, int d, int sign) {
  int64_t n = shape[(size_t)d], inner = 1, outer = 1;
  for (size_t k = (size_t)d + 1; k < shape.size(); k++) inner *= shape[k];
  for (int k = 0; k < d; k++) outer *= shape[(size_t)k];
  std::vector<cd> line((size_t)n), scratch;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      line.resize((size_t)n);
      for (int64_t j = 0; j < n; j++) line[(size_t)j] = buf[(size_t)((o * n + j) * inner + i)];
      dft(line, sign, scratch);
      for (int64_t j = 0; j < n; j++) buf[(size_t)((o * n + j) * inner + i)] = line[(size_t)j];
    }
}
std::vector<int> fft_dims(KernelContext& ctx, EValue** a, int i, const Tensor& x) {
  auto dl = int_list_arg(ctx, a, i);
  if (dl.empty()) throw_exec(std::string(ctx.op) + ": dim must not be empty");
  std::vector<int> dims;
  for (auto d : dl) {
    int k = (int)wrap_dim(d, x.dim);
    for (int e : dims)
      if (e == k) throw_exec(std::string(ctx.op) + ": repeated dim");
    dims.push_back(k);
  }
  if (x.dim == 0) throw_exec(std::string(ctx.op) + ": input must have at least one dim");
  return dims;
}
double norm_factor(int64_t mode, double n) {
  if (mode == 0) return 1.0;
  if (mode == 1) return 1.0 / std::sqrt(n);
  if (mode == 2) return 1.0 / n;
  throw_exec("fft: unknown normalization mode " + std::to_string(mode));
}

// _fft_r2c.out(self, dim, normalization, onesided, out)
void fft_r2c_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto dims = fft_dims(ctx, a, 1, x);
  int64_t mode = int_arg(a, 2);
  bool onesided = bool_arg(a, 3);
  Tensor& out = tensor_arg(a, 4);
  if (x.dtype != DType::F32 && x.dtype != DType::F64) throw_exec(std::string("_fft_r2c: input dtype ") + dtype_name(x.dtype) + " is not float32/float64");
  if (out.dtype != complex_of(x.dtype)) throw_exec(std::string("_fft_r2c: output dtype must be ") + dtype_name(complex_of(x.dtype)));
  check_contiguous(x, "_fft_r2c input");
  auto shape = shape_of(x);
  int last = dims.back();
  auto oshape = shape;
  if (onesided) oshape[(size_t)last] = shape[(size_t)last] / 2 + 1;
  double n = 1;
  for (int d : dims) {
    if (shape[(size_t)d] < 1) throw_exec("_fft_r2c: transformed dims must not be empty");
    n *= (double)shape[(size_t)d];
  }
  double f = norm_factor(mode, n);
  resize(out, oshape);
  check_contiguous(out, "_fft_r2c output");
  std::vector<cd> buf((size_t)x.numel());
  for (size_t i = 0; i < buf.size(); i++) buf[i] = cd(load_f64(x.data, x.dtype, (int64_t)i), 0);
  for (int d : dims) transform_dim(buf, shape, d, -1);
  int64_t L = shape[(size_t)last], Lo = oshape[(size_t)last], inner = 1;
  for (size_t k = (size_t)last + 1; k < shape.size(); k++) inner *= shape[k];
  for (int64_t o = 0, on = out.numel(); o < on; o++) {
    int64_t i = o % inner, j = (o / inner) % Lo, outer = o / (inner * Lo);
    store_c(out, o, buf[(size_t)((outer * L + j) * inner + i)] * f);
  }
}

// _fft_c2r.out(self, dim, normalization, last_dim_size, out): inverse transforms over dim, the
// last of which holds the non-negative frequencies of a real signal of last_dim_size samples.
void fft_c2r_kernel(KernelContext& ctx, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  auto dims = fft_dims(ctx, a, 1, x);
  int64_t mode = int_arg(a, 2), L = int_arg(a, 3);
  Tensor& out = tensor_arg(a, 4);
  if (!is_complex(x.dtype)) throw_exec(std::string("_fft_c2r: input dtype ") + dtype_name(x.dtype) + " is not complex");
  if (out.dtype != real_of(x.dtype)) throw_exec(std::string("_fft_c2r: output dtype must be ") + dtype_name(real_of(x.dtype)));
  if (L < 1) throw_exec("_fft_c2r: last_dim_size must be positive");
  check_contiguous(x, "_fft_c2r input");
  auto shape = shape_of(x);
  int last = dims.back();
  auto oshape = shape;
  oshape[(size_t)last] = L;
  double n = 1;
  for (int d : dims) n *= (double)oshape[(size_t)d];
  double f = norm_factor(mode, n);
  resize(out, oshape);
  check_contiguous(out, "_fft_c2r output");
  // the full Hermitian spectrum along `last`, then inverse transforms over every dim
  int64_t Li = shape[(size_t)last], inner = 1, outer = 1;
  for (size_t k = (size_t)last + 1; k < shape.size(); k++) inner *= shape[k];
  for (int k = 0; k < last; k++) outer *= shape[(size_t)k];
  std::vector<cd> buf((size_t)(outer * L * inner));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      for (int64_t j = 0; j < L; j++) {
        int64_t src = j <= L / 2 ? j : L - j;
        cd v = src < Li ? load_c(x, (o * Li + src) * inner + i) : cd(0, 0);
        buf[(size_t)((o * L + j) * inner + i)] = j <= L / 2 ? v : std::conj(v);
      }
  for (int d : dims)
    if (d != last) transform_dim(buf, oshape, d, +1);
  // the last dim: only the real part of the inverse is kept (the imaginary parts of the zero and
  // Nyquist bins are ignored); the other dims' transforms must come first, so re-symmetrise
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      for (int64_t j = L / 2 + 1; j < L; j++)
        buf[(size_t)((o * L + j) * inner + i)] = std::conj(buf[(size_t)((o * L + (L - j)) * inner + i)]);
  transform_dim(buf, oshape, last, +1);
  for (size_t i = 0; i < buf.size(); i++) store_f64(out.data, out.dtype, (int64_t)i, buf[i].real() * f);
}

// _conj_physical.out(self, out)
void conj_physical_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 1);
  if (out.dtype != x.dtype) throw_exec("_conj_physical: output dtype does not match the input's");
  check_contiguous(x, "_conj_physical input");
  resize_like(out, x);
  check_contiguous(out, "_conj_physical output");
  if (!is_complex(x.dtype)) {
    if (x.nbytes() && out.data != x.data) std::memmove(out.data, x.data, x.nbytes());
    return;
  }
  for (int64_t i = 0, n = x.numel(); i < n; i++) store_c(out, i, std::conj(load_c(x, i)));
}

// view_as_real_copy.out(self, out): complex [...] -> real [..., 2].
void view_as_real_kernel(KernelContext&, EValue** a, size_t) {
  const Tensor& x = tensor_arg(a, 0);
  Tensor& out = tensor_arg(a, 1);
  if (!is_complex(x.dtype)) throw_exec(std::string("view_as_real_copy: input dtype ") + dtype_name(x.dtype) + " is not complex");
  if (out.dtype != real_of(x.dtype)) throw_exec(std::string("view_as_real_copy: output dtype must be ") + dtype_name(real_of(x.dtype)));
  if (x.dim + 1 > kMaxDims) throw_exec("view_as_real_copy: too many dims");
  check_contiguous(x, "view_as_real_copy input");
  auto s = shape_of(x);
  s.push_back(2);
  resize(out, s);
  check_contiguous(out, "view_as_real_copy output");
  if (x.nbytes() && out.data != x.data) std::memmove(out.data, x.data, x.nbytes());
}

}  // namespace

void register_fft_kernels(KernelRegistry& r) {
  r.add("aten::_fft_r2c.out", &fft_r2c_kernel, "portable", 5);
  r.add("aten::_fft_c2r.out", &fft_c2r_kernel, "portable", 5);
  r.add("aten::_conj_physical.out", &conj_physical_kernel, "portable", 2);
  r.add("aten::view_as_real_copy.out", &view_as_real_kernel, "portable", 2);
}

}  // namespace etnp
