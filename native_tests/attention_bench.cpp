// attention_bench [LAYERS [KEYS [KV_HEADS]]]: a decode step's attention (llm::attention_f32, the
// custom SDPA's core: one query position, 9 query heads over KV_HEADS (3) key/value heads of 64,
// a 2048-row cache, KEYS (1964) attended) over LAYERS (30) separate caches, as a SmolLM-135M-class
// decoder at a long context reads them: with 30 layers the caches (90 MB) stream from memory, with
// 1 they stay in L3 - the gap is what the kernel loses to memory. Prints the best of 20 passes:
// microseconds a layer and the GB/s of K and V read. Build against the package's objects (after
// build_ext), run pinned to one core:
//   g++ -std=c++17 -O2 -Inative/include -Inative/src native_tests/attention_bench.cpp
//       $(find build/etnp-objects -name '*.o' -path '*native/src*') -pthread -o build/attention_bench
//   taskset -c 0 build/attention_bench 30 1964; taskset -c 0 build/attention_bench 1 1964
// (Thirteenth session, this box: 30 layers 360-410 us a layer, 7-8 GB/s; 1 layer 129 us, 23 GB/s.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llm/attention.h"

int main(int argc, char** argv) {
  using namespace etnp;
  const int layers = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  const int64_t rows = 2048, D = 64;
  const int64_t keys = argc > 2 ? std::min<int64_t>(rows, std::max(1, std::atoi(argv[2]))) : 1964;
  const int64_t H = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3, G = std::max<int64_t>(1, 9 / H);
  std::vector<std::vector<float>> K((size_t)layers), V((size_t)layers);
  for (int l = 0; l < layers; l++) {
    K[(size_t)l].assign((size_t)(rows * H * D), 0.01f * (float)(l % 7));
    V[(size_t)l].assign((size_t)(rows * H * D), 0.02f);
  }
  std::vector<float> q((size_t)(H * G * D), 0.1f), out((size_t)(H * G * D));
  KernelContext ctx;  // (no pool: one thread)
  llm::AttentionShape s;
  s.batch = 1, s.q_len = 1, s.q_heads = H * G, s.head_dim = D, s.kv_heads = H, s.kv_rows = rows;
  s.num_keys = keys, s.start_pos = keys - 1, s.causal = true, s.scale = 0.125f;
  double best = 1e30;
  for (int r = 0; r < 20; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < layers; l++)
      llm::attention_f32(ctx, s, q.data(), K[(size_t)l].data(), V[(size_t)l].data(), nullptr, out.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / layers);
  }
  std::printf("%d layer(s), %lld keys, %lld KV heads: %.1f us a layer, %.1f GB/s of K and V\n", layers, (long long)keys,
              (long long)H, best * 1e6, 2.0 * (double)(keys * H * D * 4) / best / 1e9);
  return out[0] == out[0] ? 0 : 1;
}
