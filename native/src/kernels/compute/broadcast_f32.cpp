#include "kernels/compute/broadcast_f32.h"

namespace etnp {

bool plan_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::vector<int64_t>& out,
                    BroadcastPlan& p) {
  return plan_broadcast(a.data(), a.size(), b.data(), b.size(), out.data(), out.size(), p);
}

bool plan_broadcast(const int64_t* a, size_t ra, const int64_t* b, size_t rb, const int64_t* out, size_t ro,
                    BroadcastPlan& p) {
  if (ra > ro || rb > ro) return false;
  // each operand's strides over the output's dims (0 where it has size 1 or no such dim)
  int64_t da[BroadcastPlan::kMaxRank * 2], db[BroadcastPlan::kMaxRank * 2], dd[BroadcastPlan::kMaxRank * 2];
  if (ro > (size_t)BroadcastPlan::kMaxRank * 2) return false;
  int64_t stride_a = 1, stride_b = 1, numel = 1;
  for (size_t k = ro; k-- > 0;) {
    const int64_t n = out[k];
    const int64_t ka = (int64_t)k - (int64_t)(ro - ra), kb = (int64_t)k - (int64_t)(ro - rb);
    const int64_t na = ka >= 0 ? a[(size_t)ka] : 1, nb = kb >= 0 ? b[(size_t)kb] : 1;
    if ((na != n && na != 1) || (nb != n && nb != 1)) return false;
    da[k] = na == 1 ? 0 : stride_a;
    db[k] = nb == 1 ? 0 : stride_b;
    dd[k] = n;
    stride_a *= na;
    stride_b *= nb;
    numel *= n;
  }
  p.numel = numel;
  p.rank = 0;
  if (numel == 0) return true;
  // drop size-1 dims, merge a dim into the one inside it where both operands continue contiguously
  for (size_t k = 0; k < ro; k++) {
    if (dd[k] == 1) continue;
    if (p.rank > 0) {
      const int r = p.rank - 1;
      if (p.sa[r] == da[k] * dd[k] && p.sb[r] == db[k] * dd[k]) {
        p.dim[r] *= dd[k];
        p.sa[r] = da[k];
        p.sb[r] = db[k];
        continue;
      }
    }
    if (p.rank == BroadcastPlan::kMaxRank) return false;
    p.dim[p.rank] = dd[k];
    p.sa[p.rank] = da[k];
    p.sb[p.rank] = db[k];
    p.rank++;
  }
  return true;
}

void broadcast_row_offsets(const BroadcastPlan& p, int64_t r, int64_t& oa, int64_t& ob) {
  oa = ob = 0;
  for (int k = p.rank - 2; k >= 0 && r > 0; k--) {
    const int64_t i = r % p.dim[k];
    r /= p.dim[k];
    oa += i * p.sa[k];
    ob += i * p.sb[k];
  }
}

}  // namespace etnp
