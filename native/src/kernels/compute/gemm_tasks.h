// How the float and int8 GEMMs cut their work into thread-pool tasks: row blocks x ranges of
// 16-column panels.
#pragma once
#include <algorithm>
#include <cstdint>

#include "threadpool/threadpool.h"

namespace etnp {

// The pool for M x N x K multiply-adds, or none below 64 Ki of them (a split costs more than it saves).
inline ThreadPool* gemm_pool(ThreadPool* pool, int64_t M, int64_t N, int64_t K) {
  return M * N * K > (1 << 16) ? pool : nullptr;
}

// Ranges of `per` panels (an even number: kernels take panels in pairs), `split` ranges per row
// block, small enough for at least four tasks a thread when the rows alone give fewer.
struct GemmTasks {
  int64_t per, split;
};
// (Ranges are rounded up: 3 panels wanted whole stay one range of 4, not 2 + 1 - a split by
// columns that no one asked for gives unequal tasks, and threads writing parts of the same
// output rows share their cache lines.)
inline GemmTasks gemm_tasks(int64_t row_blocks, int64_t panels, const ThreadPool* tp) {
  const int nt = tp ? tp->num_threads() : 1;
  const int64_t want = row_blocks >= nt * 4 ? 1 : (nt * 4 + row_blocks - 1) / row_blocks;
  const int64_t each = (panels + want - 1) / want;
  const int64_t per = std::max<int64_t>(2, (each + 1) / 2 * 2);
  return {per, (panels + per - 1) / per};
}

}  // namespace etnp
