#include "delegates/xnnpack/xnn_reuse_plan.h"

#include <algorithm>

#include "delegates/xnnpack/xnn_ops.h"
#include "util/compiler.h"

namespace etnp::xnn {

ReusePlan plan_reuse(const Graph& g, const std::vector<int64_t>& chain_end, bool codes) {
  const size_t nv = g.values.size(), nn = g.nodes.size();
  std::vector<int64_t> last_use(nv, -1), produced_at(nv, -1);
  for (size_t i = 0; i < nn; i++) {
    for (uint32_t id : g.nodes[i].inputs)
      if (id < nv) last_use[id] = chain_end[i];
    for (uint32_t id : {g.nodes[i].output, g.nodes[i].output2})
      if (id < nv && produced_at[id] < 0) produced_at[id] = (int64_t)i;
  }
  for (uint32_t id : g.input_ids) produced_at[id] = -1;
  for (uint32_t id : g.output_ids) produced_at[id] = -1;
  // internal: written by a node, neither constant nor a graph input/output; holding a buffer of
  // the kind planned (codes: values kept as codes alone, and dynamically quantized values, whose
  // every write makes their codes too - finalize_value)
  auto internal = [&](uint32_t id) {
    const Value& v = g.values[id];
    const bool kind = codes ? v.as_codes || dynamically_quantized(v) : !v.as_codes;
    return produced_at[id] >= 0 && !v.is_constant && v.external_id == kInvalidId && kind;
  };
  auto static_size = [&](uint32_t id) {
    int64_t n = 1;
    for (int64_t d : g.values[id].dims)
      if (d < 0 || etnp::mul_overflow(n, d, &n)) return int64_t(0);
    return n;
  };
  ReusePlan plan;
  std::vector<uint32_t> free_ids;   // dead values holding a buffer worth taking
  std::vector<int64_t> cap(nv, 0);  // planned size of the buffer each value holds
  std::vector<std::vector<uint32_t>> dies_after(nn);
  for (uint32_t id = 0; id < nv; id++)
    if (internal(id)) dies_after[(size_t)std::max(last_use[id], chain_end[(size_t)produced_at[id]])].push_back(id);
  plan.end.assign(nn, 0);
  for (size_t i = 0; i < nn; i++) {
    for (uint32_t o : {g.nodes[i].output, g.nodes[i].output2}) {
      if (o >= nv || !internal(o) || produced_at[o] != (int64_t)i) continue;
      const int64_t want = static_size(o);
      // the smallest free buffer that fits, else the largest (it grows once)
      int best = -1;
      for (size_t f = 0; f < free_ids.size(); f++) {
        const int64_t c = cap[free_ids[f]];
        if (best < 0) {
          best = (int)f;
          continue;
        }
        const int64_t bc = cap[free_ids[(size_t)best]];
        const bool fits = c >= want, best_fits = bc >= want;
        if ((fits && (!best_fits || c < bc)) || (!fits && !best_fits && c > bc)) best = (int)f;
      }
      if (best >= 0) {
        const uint32_t giver = free_ids[(size_t)best];
        free_ids.erase(free_ids.begin() + best);
        plan.swaps.push_back({o, giver});
        cap[o] = std::max(cap[giver], want);
      } else {
        cap[o] = want;
      }
    }
    plan.end[i] = plan.swaps.size();
    for (uint32_t id : dies_after[i]) free_ids.push_back(id);
  }
  return plan;
}

}  // namespace etnp::xnn
