// Broadcasting binary elementwise ops on contiguous data (float32 mostly), for every broadcast pattern:
// the operands' shapes are aligned to the output's (numpy rules), size-1 output dims dropped and
// adjacent dims merged wherever both operands stay contiguous across them, so the work becomes
// rows of one inner dimension in which each operand is either contiguous or a repeated scalar
// (a per-channel scale over NCHW, a [C] bias over NHWC, rope's [S,1,D] over [S,H,D], ...). The
// inner loop is one of four plain loops the compiler vectorises; rows go across the pool.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "threadpool/threadpool.h"

namespace etnp {

struct BroadcastPlan {
  static constexpr int kMaxRank = 16;
  int rank = 0;                     // merged dims; the last is the inner one
  int64_t dim[kMaxRank] = {};
  int64_t sa[kMaxRank] = {}, sb[kMaxRank] = {};  // element strides (0: broadcast)
  int64_t numel = 0;
};

// False when a's or b's shape does not broadcast to `out` or the rank is too large.
bool plan_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::vector<int64_t>& out,
                    BroadcastPlan& p);

// Row r's element offsets in a and b (r counts the rows of the inner dimension).
void broadcast_row_offsets(const BroadcastPlan& p, int64_t r, int64_t& oa, int64_t& ob);

// z = f(x, y) elementwise under the plan; rows across the pool (null: this thread). Any element
// types (float32 in the common case; comparisons write bool bytes, integer ops int64).
template <typename TX, typename TY, typename TZ, typename F>
void broadcast_binary(ThreadPool* pool, const BroadcastPlan& p, const TX* x, const TY* y, TZ* z, F f) {
  if (p.numel == 0) return;
  const int64_t inner = p.rank ? p.dim[p.rank - 1] : 1;
  const int64_t ia = p.rank ? p.sa[p.rank - 1] : 0, ib = p.rank ? p.sb[p.rank - 1] : 0;
  const int64_t rows = p.numel / inner;
  // tasks: pieces of rows (a long inner dimension - same-shape operands merge into one row - is
  // cut into pieces of at least 32 Ki elements, so the threads can share it)
  constexpr int64_t kPiece = int64_t(1) << 15;
  const bool threads = pool && pool->num_threads() > 1;
  const int64_t pieces = threads && inner >= 2 * kPiece ? inner / kPiece : 1;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t r = t / pieces, k = t % pieces;
      const int64_t j0 = inner * k / pieces, j1 = inner * (k + 1) / pieces;
      int64_t oa, ob;
      broadcast_row_offsets(p, r, oa, ob);
      const TX* u = x + oa + (ia ? j0 : 0);
      const TY* v = y + ob + (ib ? j0 : 0);
      TZ* w = z + r * inner + j0;
      const int64_t len = j1 - j0;
      if (ia && ib) {
        for (int64_t j = 0; j < len; j++) w[j] = f(u[j], v[j]);
      } else if (ia) {
        const TY s = *v;
        for (int64_t j = 0; j < len; j++) w[j] = f(u[j], s);
      } else if (ib) {
        const TX s = *u;
        for (int64_t j = 0; j < len; j++) w[j] = f(s, v[j]);
      } else {
        const TZ s = f(*u, *v);
        for (int64_t j = 0; j < len; j++) w[j] = s;
      }
    }
  };
  // bandwidth-bound: split only when the tasks hold at least 64 Ki elements a part
  const int64_t tasks = rows * pieces, grain = std::max<int64_t>(1, (int64_t(1) << 16) / (inner / pieces));
  if (threads && tasks > grain) pool->parallel_for(tasks, grain, run);
  else run(0, tasks);
}

}  // namespace etnp
