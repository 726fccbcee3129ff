// attention_block's portable path (attention_block_impl.h over 8 plain float lanes, written for the
// auto-vectoriser) and the run-time choice of path.
#include "llm/attention_block.h"

#include "kernels/compute/cpu_features.h"
#include "llm/attention_block_impl.h"

namespace etnp {
namespace llm {
namespace {
struct Lanes8 {
  float x[8];
};
struct Portable {
  using V = Lanes8;
  static V set1(float a) {
    V r;
    for (int i = 0; i < 8; i++) r.x[i] = a;
    return r;
  }
  static V load(const float* p) {
    V r;
    for (int i = 0; i < 8; i++) r.x[i] = p[i];
    return r;
  }
  static void store(float* p, V v) {
    for (int i = 0; i < 8; i++) p[i] = v.x[i];
  }
  static V add(V a, V b) {
    for (int i = 0; i < 8; i++) a.x[i] += b.x[i];
    return a;
  }
  static V mul(V a, V b) {
    for (int i = 0; i < 8; i++) a.x[i] *= b.x[i];
    return a;
  }
  static void prefetch(const float*) {}  // (no portable hint)
  static float sum8(V a) { return ((a.x[0] + a.x[4]) + (a.x[1] + a.x[5])) + ((a.x[2] + a.x[6]) + (a.x[3] + a.x[7])); }
  static void sum8x4(V a0, V a1, V a2, V a3, float* out) {
    out[0] = sum8(a0), out[1] = sum8(a1), out[2] = sum8(a2), out[3] = sum8(a3);
  }
};

struct Paths {
  void (*scores)(const ScoreBlock&);
  void (*values)(const ValueSums&);
};
Paths chosen() {
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return {attention_scores_avx2, attention_values_avx2};
#endif
  return {attention_scores_portable, attention_values_portable};
}
const Paths& paths() {
  static const Paths p = chosen();
  return p;
}
}  // namespace

void attention_scores_portable(const ScoreBlock& a) { block_impl::scores<Portable>(a); }
void attention_values_portable(const ValueSums& a) { block_impl::values<Portable>(a); }
void attention_scores(const ScoreBlock& a) { paths().scores(a); }
void attention_values(const ValueSums& a) { paths().values(a); }

}  // namespace llm
}  // namespace etnp
