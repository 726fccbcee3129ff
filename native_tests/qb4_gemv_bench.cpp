// qb4_gemv_bench [LAYERS [REPS [THREADS]]]: the M = 1 4-bit GEMV (qgemm_qb4, a decode step's
// FullyConnected nodes) against a plain streaming read of the same packed bytes, on one core by
// default. The weights are a SmolLM-135M-class decoder's (LAYERS layers, 30 by default, of
// q 576x576, k and v 576x192, o 576x576, gate and up 576x1536, down 1536x576, then an lm_head
// 576x49152; blocks of 32, bfloat16 scales; packed into the weight arena as a load packs them):
// 76.5 MB, far past a core's L2, so each pass
// streams them as a decode step does. Interleaved passes (GEMV, read, read as 4 ranges side by
// side, GEMV, ...), medians of REPS (15) each, CPU time on one thread (other processes of a shared
// machine do not count), wall clock on more: GB/s of packed weights and the GEMV's ratio to the
// reads. Then the GEMV on one matrix that stays in L2 (the kernel's instruction-bound rate).
// Build against the package's objects (after build_ext), run pinned to one core:
//   g++ -std=c++17 -O2 -Inative/src native_tests/qb4_gemv_bench.cpp \
//       $(find build/etnp-objects -name '*.o' -path '*native/src*') -pthread -o build/qb4_gemv_bench
//   taskset -c 0 build/qb4_gemv_bench
// ETNP_CPU=avx2 / generic select the other paths, as everywhere.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "kernels/compute/qgemm_qb4.h"
#include "threadpool/threadpool.h"
#include "util/weight_arena.h"

namespace {

struct Linear {
  etnp::PackedQB4 w;
  std::vector<uint8_t> x;  // one row of activation codes
  std::vector<float> y;
};

Linear make_linear(int64_t K, int64_t N, std::mt19937& rng) {
  const int64_t bs = 32, nb = (K + bs - 1) / bs, rb = (K + 1) / 2;
  std::vector<uint8_t> rows((size_t)(N * rb));
  for (auto& r : rows) r = (uint8_t)rng();
  std::vector<float> S((size_t)(N * nb));
  for (auto& s : S) s = (float)(1 + rng() % 255) / 4096.f;  // (exact in bfloat16)
  Linear l;
  l.w = etnp::pack_qb4_bytes(K, N, bs, rows.data(), rb, [&](int64_t n, int64_t b) { return S[(size_t)(n * nb + b)]; });
  l.x.resize((size_t)K);
  for (auto& v : l.x) v = (uint8_t)rng();
  l.y.resize((size_t)N);
  return l;
}

// one thread: the process's CPU time (a shared machine's other processes do not count in it);
// more: wall clock
bool g_cpu_time = true;
double seconds() {
  if (g_cpu_time) return (double)std::clock() / CLOCKS_PER_SEC;
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// OR of every 8-byte word, eight independent lanes (the compiler vectorises it): bound by the
// reads alone
uint64_t stream_read(const uint8_t* p, size_t n) {
  uint64_t a[8] = {};
  const size_t words = n / 8;
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  size_t i = 0;
  for (; i + 8 <= words; i += 8)
    for (int j = 0; j < 8; j++) a[j] |= q[i + j];
  uint64_t r = 0;
  for (int j = 0; j < 8; j++) r |= a[j];
  return r;
}

// the same, the bytes as 4 ranges read side by side (more lines in flight)
uint64_t stream_read4(const uint8_t* p, size_t n) {
  uint64_t a[8] = {};
  const size_t words = n / 8 / 32 * 8;  // (a range's words, a multiple of 8)
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  for (size_t i = 0; i < words; i += 8)
    for (int r = 0; r < 4; r++)
      for (int j = 0; j < 8; j++) a[j] |= q[r * words + i + j];
  uint64_t s = stream_read(p + 4 * words * 8, n - 4 * words * 8);
  for (int j = 0; j < 8; j++) s |= a[j];
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 15;
  const int threads = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  g_cpu_time = threads == 1;
  std::mt19937 rng(7);
  std::vector<Linear> net;
  net.reserve((size_t)layers * 7 + 1);
  // (packed as a delegate's load packs them: in the weight arena, one after another; the
  // activations and outputs stay heap blocks)
  etnp::weight_arena::LoadScope packing;
  const int64_t shapes[7][2] = {{576, 576}, {576, 192}, {576, 192}, {576, 576}, {576, 1536}, {576, 1536}, {1536, 576}};
  for (int l = 0; l < layers; l++)
    for (const auto& s : shapes) net.push_back(make_linear(s[0], s[1], rng));
  net.push_back(make_linear(576, 49152, rng));
  size_t bytes = 0;
  for (const Linear& l : net) bytes += l.w.data.size();
  etnp::ThreadPool pool(threads);
  const float sa = 0.02f;
  const int32_t za = 3;
  const float inf = 1e30f;
  auto gemvs = [&](std::vector<Linear>& ls) {
    for (Linear& l : ls)
      etnp::qgemm_qb4(&pool, 1, l.x.data(), l.w.K, &sa, &za, l.w, nullptr, -inf, inf, l.y.data(), l.w.N);
  };
  volatile uint64_t sink = 0;
  auto reads = [&] {
    for (const Linear& l : net) sink = sink + stream_read(l.w.data.data(), l.w.data.size());
  };
  auto reads4 = [&] {  // (each matrix as 4 ranges read side by side)
    for (const Linear& l : net) sink = sink + stream_read4(l.w.data.data(), l.w.data.size());
  };
  gemvs(net), reads();  // (warm: pages, code)
  std::vector<double> tg, tr, t4;
  for (int r = 0; r < reps; r++) {
    double t0 = seconds();
    gemvs(net);
    tg.push_back(seconds() - t0);
    t0 = seconds();
    reads();
    tr.push_back(seconds() - t0);
    t0 = seconds();
    reads4();
    t4.push_back(seconds() - t0);
  }
  const double g = median(tg), rd = median(tr), r4 = median(t4);
  std::printf("%zu GEMVs, %.1f MB packed, %d thread(s), medians of %d interleaved passes (%s)\n", net.size(),
              bytes / 1e6, threads, reps, g_cpu_time ? "CPU time" : "wall clock");
  std::printf("  qgemm_qb4 M=1   %8.3f ms  %6.2f GB/s\n", g * 1e3, bytes / g / 1e9);
  std::printf("  streaming read  %8.3f ms  %6.2f GB/s\n", rd * 1e3, bytes / rd / 1e9);
  std::printf("  4 ranges read   %8.3f ms  %6.2f GB/s\n", r4 * 1e3, bytes / r4 / 1e9);
  std::printf("  GEMV / read     %8.3f (/ 4 ranges read %.3f)\n", rd / g, r4 / g);
  // in cache: the largest layer matrix (576x1536, 0.5 MB) again and again
  std::vector<Linear> one;
  one.push_back(make_linear(576, 1536, rng));
  const size_t ob = one[0].w.data.size();
  const int inner = 200;
  std::vector<double> tc;
  for (int r = 0; r < reps; r++) {
    const double t0 = seconds();
    for (int i = 0; i < inner; i++) gemvs(one);
    tc.push_back((seconds() - t0) / inner);
  }
  const double c = median(tc);
  std::printf("  in L2 (576x1536, %.2f MB): %.2f us a GEMV, %6.2f GB/s\n", ob / 1e6, c * 1e6, ob / c / 1e9);
  return 0;
}
