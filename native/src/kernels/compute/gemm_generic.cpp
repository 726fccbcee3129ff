#include "kernels/compute/gemm_generic.h"

#include <algorithm>

#include "kernels/compute/portable_ops.h"
#include "util/compiler.h"

namespace etnp {
namespace {

constexpr int NR = 16;  // a packed B panel's width

// acc[i][j] = sum_k A(i, k) * b[k * NR + j] for ROWS rows x the first NC columns of the panel.
// The accumulators are a local array the compiler keeps in vector registers (3 x 16 floats: 12
// of the 16 registers of a 128-bit SIMD target - SSE2, WASM SIMD128, NEON, RVV at VLEN 128 - with
// 4 for B and the broadcast); each k step copies its row of B to a local array first (reading
// the panel in the multiply-add itself, GCC keeps the accumulators in memory). The sums leave
// through a plain store to acc: an epilogue written here, after the loop, made GCC split the
// accumulators into 2-lane pieces and spill half of them (2.2x slower).
template <int ROWS, int NC>
ETNP_SLP_ONLY void tile(int64_t K, const float* A, int64_t rsa, int64_t csa, const float* b, float* acc) {
  float c[ROWS][NC] = {};
  for (int64_t k = 0; k < K; k++) {
    float bk[NC];
    for (int j = 0; j < NC; j++) bk[j] = b[k * NR + j];
    for (int i = 0; i < ROWS; i++) {
      const float av = A[i * rsa + k * csa];
      for (int j = 0; j < NC; j++) c[i][j] += av * bk[j];
    }
  }
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < NC; j++) acc[i * NR + j] = c[i][j];
}

using Tile = void (*)(int64_t, const float*, int64_t, int64_t, const float*, float*);
// [rows - 1][16, 8 or 4 columns]
const Tile kTiles[3][3] = {{&tile<1, 16>, &tile<1, 8>, &tile<1, 4>},
                           {&tile<2, 16>, &tile<2, 8>, &tile<2, 4>},
                           {&tile<3, 16>, &tile<3, 8>, &tile<3, 4>}};

}  // namespace

void sgemm_tile_generic(int64_t K, int64_t rows, int64_t cols, const float* A, int64_t rsa, int64_t csa,
                        const float* b, float* C, int64_t ldc, const float* bias_row, const float* bias_col,
                        bool accumulate, float lo, float hi) {
  const int w = cols > 8 ? 0 : cols > 4 ? 1 : 2;
  float acc[6 * NR];
  for (int64_t r0 = 0; r0 < rows; r0 += 3) {  // 3-row tiles over the same panel (it stays in L1)
    const int64_t r = std::min<int64_t>(3, rows - r0);
    kTiles[r - 1][w](K, A + r0 * rsa, rsa, csa, b, acc + r0 * NR);
  }
  for (int64_t i = 0; i < rows; i++) {
    float* c = C + i * ldc;
    const float* s = acc + i * NR;
    const float br = bias_row ? bias_row[i] : 0.f;
    for (int64_t j = 0; j < cols; j++) {
      float v = s[j] + br;
      if (bias_col) v += bias_col[j];
      if (accumulate) v += c[j];
      c[j] = clamp_f32(v, lo, hi);  // (a NaN stays NaN)
    }
  }
}

}  // namespace etnp
