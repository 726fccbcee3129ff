// Broadcasting binary elementwise ops on contiguous data (float32 mostly), for every broadcast pattern:
// the operands' shapes are aligned to the output's (numpy rules), size-1 output dims dropped and
// adjacent dims merged wherever both operands stay contiguous across them, so the work becomes
// rows of one inner dimension in which each operand is either contiguous or a repeated scalar
// (a per-channel scale over NCHW, a [C] bias over NHWC, rope's [S,1,D] over [S,H,D], ...). The
// inner loop is one of four plain loops the compiler vectorises; rows go across the pool.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
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
// The same on shapes given as (sizes, rank): no allocation.
bool plan_broadcast(const int64_t* a, size_t ra, const int64_t* b, size_t rb, const int64_t* out, size_t ro,
                    BroadcastPlan& p);

// Row r's element offsets in a and b (r counts the rows of the inner dimension).
void broadcast_row_offsets(const BroadcastPlan& p, int64_t r, int64_t& oa, int64_t& ob);

// The rows' offsets in a and b, stepped row by row without divisions (short rows - a per-channel
// scale over NHWC is rows of C elements - paid a division per row).
struct BroadcastRows {
  const BroadcastPlan& p;
  int64_t row = -1, oa = 0, ob = 0;
  int64_t idx[BroadcastPlan::kMaxRank] = {};
  void seek(int64_t r) {
    if (r == row) return;
    if (row >= 0 && r == row + 1) {
      for (int k = p.rank - 2; k >= 0; k--) {  // the odometer: carry into outer dims
        oa += p.sa[k];
        ob += p.sb[k];
        if (++idx[k] < p.dim[k]) break;
        oa -= p.sa[k] * p.dim[k];
        ob -= p.sb[k] * p.dim[k];
        idx[k] = 0;
      }
    } else {
      broadcast_row_offsets(p, r, oa, ob);
      int64_t q = r;
      for (int k = p.rank - 2; k >= 0; k--) {
        idx[k] = q % p.dim[k];
        q /= p.dim[k];
      }
    }
    row = r;
  }
};

struct NoFinish {
  template <typename TZ>
  void operator()(TZ*, int64_t) const {}
};

// z = f(x, y) elementwise under the plan; rows across the pool (null: this thread). Any element
// types (float32 in the common case; comparisons write bool bytes, integer ops int64). finish(z +
// o, n) is called on each task's output range once it is written (a clamp or rounding while the
// range is in cache); the ranges cover z once.
template <typename TX, typename TY, typename TZ, typename F, typename Finish = NoFinish>
void broadcast_binary(ThreadPool* pool, const BroadcastPlan& p, const TX* x, const TY* y, TZ* z, F f,
                      Finish finish = Finish()) {
  if (p.numel == 0) return;
  const int64_t inner = p.rank ? p.dim[p.rank - 1] : 1;
  const int64_t ia = p.rank ? p.sa[p.rank - 1] : 0, ib = p.rank ? p.sb[p.rank - 1] : 0;
  const int64_t rows = p.numel / inner;
  // tasks: pieces of rows (a long inner dimension - same-shape operands merge into one row - is
  // cut into pieces of at least 32 Ki elements, so the threads can share it)
  constexpr int64_t kPiece = int64_t(1) << 15;
  const bool threads = pool && pool->num_threads() > 1;
  const int64_t pieces = threads && inner >= 2 * kPiece ? inner / kPiece : 1;
  // Short rows over which one operand repeats (a per-channel scale or bias over NHWC: rows of C
  // elements, the other operand contiguous): k rows at a time against that operand's row
  // repeated k times, so the loop runs over hundreds of elements instead of C.
  const bool a_rep = p.rank == 2 && ia && ib && p.sa[0] == 0 && p.sb[0] == inner;
  const bool b_rep = p.rank == 2 && ia && ib && p.sb[0] == 0 && p.sa[0] == inner;
  if (pieces == 1 && inner < 1024 && (a_rep || b_rep)) {
    const int64_t k = std::max<int64_t>(1, 2048 / inner);
    auto run_rep = [&](int64_t t0, int64_t t1) {
      // rep: the repeating operand's row k times; other: the contiguous operand; g(other, rep)
      // (no more copies than the task has rows: a decode step's 2 rows of 8 must not copy 2048)
      const int64_t kt = std::min(k, t1 - t0);
      auto sweep = [&](const auto* row, const auto* other, auto g) {
        std::vector<std::remove_cv_t<std::remove_pointer_t<decltype(row)>>> rep((size_t)(kt * inner));
        for (int64_t i = 0; i < kt; i++) std::copy(row, row + inner, rep.begin() + i * inner);
        for (int64_t r = t0; r < t1; r += kt) {
          const int64_t n = std::min(kt, t1 - r) * inner;
          const auto* o = other + r * inner;
          TZ* w = z + r * inner;
          for (int64_t j = 0; j < n; j++) w[j] = g(o[j], rep[j]);
        }
      };
      if (b_rep) sweep(y, x, [&](TX u, TY v) { return f(u, v); });
      else sweep(x, y, [&](TY v, TX u) { return f(u, v); });
      finish(z + t0 * inner, (t1 - t0) * inner);
    };
    // (parts of at least 8 Ki elements: a squeeze-excitation block's channel scales over a
    // 16x16x104 map are a few microseconds of work, worth two threads)
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 13) / inner);
    if (threads && rows > grain) pool->parallel_for(rows, grain, run_rep);
    else run_rep(0, rows);
    return;
  }
  auto run = [&](int64_t t0, int64_t t1) {
    BroadcastRows cur{p};
    for (int64_t t = t0; t < t1; t++) {
      const int64_t r = t / pieces, k = t % pieces;
      const int64_t j0 = inner * k / pieces, j1 = inner * (k + 1) / pieces;
      cur.seek(r);
      const int64_t oa = cur.oa, ob = cur.ob;
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
    // tasks t0..t1 wrote one contiguous range of z (pieces in order, rows in order)
    auto offset = [&](int64_t t) { return (t / pieces) * inner + inner * (t % pieces) / pieces; };
    finish(z + offset(t0), offset(t1) - offset(t0));
  };
  // bandwidth-bound: split only when the tasks hold at least 64 Ki elements a part
  const int64_t tasks = rows * pieces, grain = std::max<int64_t>(1, (int64_t(1) << 16) / (inner / pieces));
  if (threads && tasks > grain) pool->parallel_for(tasks, grain, run);
  else run(0, tasks);
}

}  // namespace etnp
