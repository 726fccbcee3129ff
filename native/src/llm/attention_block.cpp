// attention_block's portable path (attention_block_impl.h over 8 plain float lanes, written for the
// auto-vectoriser; its multiply-adds round twice) and the run-time choice of path.
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
  static constexpr int W = 8;
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
  static V fmadd(V a, V b, V c) {
    for (int i = 0; i < 8; i++) c.x[i] += a.x[i] * b.x[i];
    return c;
  }
  static float hsum_f32(V a) {
    return ((a.x[0] + a.x[4]) + (a.x[1] + a.x[5])) + ((a.x[2] + a.x[6]) + (a.x[3] + a.x[7]));
  }
};

using BlockFn = void (*)(const AttnBlock&);
BlockFn chosen() {
#if defined(__x86_64__)
  if (cpu_has_avx512f()) return attention_block_avx512;
  if (cpu_has_avx2_fma()) return attention_block_avx2;
#endif
  return attention_block_portable;
}
}  // namespace

void attention_block_portable(const AttnBlock& a) { block_impl::block<Portable>(a); }

void attention_block(const AttnBlock& a) {
  static const BlockFn fn = chosen();
  fn(a);
}

}  // namespace llm
}  // namespace etnp
