// Scaled dot-product attention over a KV cache (see attention.h), float32 scores like ExecuTorch's
// flash-attention kernel. Work goes by row group - (batch, query position, KV head) with the G
// query heads that share the KV head (grouped-query attention) - in three passes, each over
// tasks the thread pool shares:
//  1. scores, by (row group, block of kKeyBlock keys): each K row is read once for the G heads;
//  2. the softmax of each (row group, head) row of scores (vec_softmax_row, as one row);
//  3. the weighted sums of values, by (row group, kDimChunk floats of the head dimension): each V
//     row's part is read once for the G heads, keys summed in order.
// attention_block.h's kernels make the same float operations in the same order as a plain loop
// over one head at a time, so the results do not depend on the number of threads or the path.
// Row groups go in passes that keep their scores within kScoreFloats (in L2 between the passes).
#include "llm/attention.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/compute/vec_math.h"
#include "kernels/kernel_util.h"
#include "llm/attention_block.h"
#include "os/thread_slot.h"

namespace etnp {
namespace llm {

namespace {
constexpr int64_t kKeyBlock = 256;        // keys a score task reads
constexpr int64_t kValueBlock = 256;      // keys a value task sums before the next of its pairs
constexpr int64_t kDimChunk = 32;         // head-dimension floats a value task sums (two cache lines)
constexpr int64_t kScoreFloats = 1 << 18;  // scores of one pass over row groups (1 MiB)
constexpr int64_t kTaskWork = 1 << 16;    // multiply-adds a task should carry before it is worth a thread
// A decode step whose keys' K (or V) rows take this many bytes or more reads each key block's rows
// in order first (stream_in): the head-by-head passes pick a head's part of each key's row, an
// access the hardware prefetchers follow poorly from memory (native_tests/attention_bench.cpp, 30
// layers of SmolLM-135M's cache at 1964 keys: 390 -> 246 us a layer; the whole decode step 15.5-16.4
// -> 11.2-11.3 ms). Smaller caches stay in L2 / L3 between steps, where the extra pass costs more
// than it saves (at 256 keys, 11.8 MB for 30 layers: 18 -> 22 us); from 512 KiB of K a layer on.
constexpr int64_t kStreamInBytes = 512 << 10;

// Reads the floats [p, p + n) in order: their lines come into the caches as one sequential
// stream, which the hardware prefetchers run ahead of.
void stream_in(const float* p, int64_t n) {
  // (every word, eight independent ORs: a plain sequential read - reading one float a line, with
  // one or eight sums, ran 1.1-1.6x slower in attention_bench)
  const unsigned char* b = reinterpret_cast<const unsigned char*>(p);
  const int64_t words = n / 2;
  uint64_t acc[8] = {};
  for (int64_t i = 0; i + 8 <= words; i += 8)
    for (int u = 0; u < 8; u++) {
      uint64_t x;
      std::memcpy(&x, b + (i + u) * 8, 8);
      acc[u] |= x;
    }
  static volatile uint64_t sink;
  sink = acc[0] | acc[1] | acc[2] | acc[3] | acc[4] | acc[5] | acc[6] | acc[7];
}
}  // namespace

void attention_f32(KernelContext& ctx, const AttentionShape& s, const float* q, const float* k, const float* v,
                   const float* mask, float* out) {
  const int64_t D = s.head_dim, Hq = s.q_heads, Hkv = s.kv_heads, G = s.q_heads / s.kv_heads;
  const int64_t kv_row = Hkv * D, kv_batch = s.kv_rows * kv_row;
  const int64_t row_groups = s.batch * s.q_len * Hkv;
  const int64_t ld = std::max<int64_t>(1, s.num_keys), per_group = G * ld;
  const int64_t per_pass = std::max<int64_t>(1, kScoreFloats / per_group);
  ETNP_THREAD_LOCAL(std::vector<float>, scores);
  scores.resize((size_t)(std::min(row_groups, per_pass) * per_group));
  float* sc = scores.data();  // (the workers' own thread_locals are not this thread's)
  const int64_t nb = (ld + kKeyBlock - 1) / kKeyBlock, chunks = (D + kDimChunk - 1) / kDimChunk;
  auto query_pos = [&](int64_t rg) { return (rg / Hkv) % s.q_len; };
  auto keys_of = [&](int64_t rg) {  // the keys row group rg attends
    return s.causal ? std::min(s.num_keys, s.start_pos + query_pos(rg) + 1) : s.num_keys;
  };
  const int64_t score_grain = std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, G * std::min(ld, kKeyBlock) * D));
  const int64_t softmax_grain = std::max<int64_t>(1, (kTaskWork / 4) / ld);
  const int64_t value_grain = std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, G * ld * std::min(D, kDimChunk)));
  // (a decode step's key blocks read in order first where its cache is large: stream_in)
  const bool stream = s.q_len == 1 && s.batch == 1 && s.num_keys * kv_row * (int64_t)sizeof(float) >= kStreamInBytes;
  for (int64_t r0 = 0; r0 < row_groups; r0 += per_pass) {
    const int64_t r1 = std::min(row_groups, r0 + per_pass);
    const int64_t groups = r1 - r0;
    // (key block by key block, each block's row groups one after another: the KV heads' rows of a
    // block - one record per key, the heads side by side - are read from memory once, not once a head)
    parallel(ctx, groups * nb, score_grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) {
        const int64_t rg = r0 + t % groups, n0 = (t / groups) * kKeyBlock, n1 = std::min(keys_of(rg), n0 + kKeyBlock);
        if (n1 <= n0) continue;
        if (stream && (t % groups == 0 || t == t0)) stream_in(k + n0 * kv_row, (n1 - n0) * kv_row);
        const int64_t h = rg % Hkv, b = rg / (Hkv * s.q_len), i = query_pos(rg);
        ScoreBlock a;
        a.q = q + ((b * s.q_len + i) * Hq + h * G) * D;
        a.k = k + b * kv_batch + n0 * kv_row + h * D;
        a.mask = mask ? mask + i * s.num_keys + n0 : nullptr;
        a.groups = G, a.head_dim = D, a.kv_stride = kv_row, a.n = n1 - n0, a.scale = s.scale;
        a.s = sc + (rg - r0) * per_group + n0, a.ld = ld;
        attention_scores(a);
      }
    });
    parallel(ctx, (r1 - r0) * G, softmax_grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t++) {
        const int64_t nk = keys_of(r0 + t / G);
        float* row = sc + (t / G) * per_group + (t % G) * ld;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t n = 0; n < nk; n++) mx = std::max(mx, row[n]);
        if (nk > 0 && mx > -std::numeric_limits<float>::infinity()) vec_softmax_row(row, row, nk);
        else std::fill(row, row + std::max<int64_t>(nk, 0), 0.f);  // nothing to attend: zeros out
      }
    });
    // a task's (row group, chunk) pairs go key block by key block, each block's pairs one after
    // another (its V records read from memory once, not once a pair); a pair's sums are kept in out
    // between blocks, keys added in order as by one pass
    parallel(ctx, groups * chunks, value_grain, [&](int64_t t0, int64_t t1) {
      int64_t most = 0;
      for (int64_t t = t0; t < t1; t++) {
        const int64_t rg = r0 + t / chunks, h = rg % Hkv, d0 = (t % chunks) * kDimChunk, d1 = std::min(D, d0 + kDimChunk);
        float* o = out + (rg / Hkv * Hq + h * G) * D;
        for (int64_t g = 0; g < G; g++) std::fill(o + g * D + d0, o + g * D + d1, 0.f);
        most = std::max(most, keys_of(rg));
      }
      for (int64_t j0 = 0; j0 < most; j0 += kValueBlock) {
        if (stream) stream_in(v + j0 * kv_row, (std::min(most, j0 + kValueBlock) - j0) * kv_row);
        for (int64_t t = t0; t < t1; t++) {
          const int64_t rg = r0 + t / chunks, h = rg % Hkv, b = rg / (Hkv * s.q_len);
          const int64_t j1 = std::min(keys_of(rg), j0 + kValueBlock);
          if (j1 <= j0) continue;
          ValueSums a;
          a.w = sc + (t / chunks) * per_group + j0, a.ld = ld;
          a.v = v + b * kv_batch + j0 * kv_row + h * D;
          a.groups = G, a.kv_stride = kv_row, a.n = j1 - j0;
          a.d0 = (t % chunks) * kDimChunk, a.d1 = std::min(D, a.d0 + kDimChunk);
          a.out = out + (rg / Hkv * Hq + h * G) * D, a.head_dim = D;
          attention_values(a);
        }
      }
    });
  }
}

}  // namespace llm
}  // namespace etnp
