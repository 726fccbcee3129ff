// Writing and restoring the XNNPACK delegate's packed state (see xnn_weight_cache.h).
// Section: u32 node count, then per node with packed state: u32 origin, u32 flags (1: qconv_grouped,
// 2: winograd, 4: winograd1d), the bias, the
// float packings (K, N, u64 1 for float16 panels else 0, data: none for a placeholder), qpacked, qconv, qblocks, qb4, qdw. Arrays:
// u64 count, then the elements at a 64-byte aligned offset (views need the alignment packing gives).
#include "delegates/xnnpack/xnn_weight_cache.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "delegates/xnnpack/xnn_node_util.h"

namespace etnp::xnn {

namespace {

constexpr uint32_t kSectionVersion = 4;  // 2: float16 panels, 3: Winograd filters (flag 2), 4: 1-D ones (flag 4)

bool has_state(const Node& n) {
  return !n.packed.empty() || n.qpacked.N > 0 || !n.qconv.empty() || !n.qblocks.empty() || n.qb4.N > 0 ||
         n.qdw.taps > 0 || !n.bias.empty();
}

template <typename A>
void put_array(SectionWriter& w, const A& a) {
  w.put<uint64_t>(a.size());
  w.align(64);
  w.bytes(a.data(), a.size() * sizeof(a[0]));
  w.align(8);
}

void put_q8(SectionWriter& w, const PackedQ8& q) {
  w.put<int64_t>(q.K), w.put<int64_t>(q.N), w.put<int64_t>(q.Kp);
  w.put<uint64_t>(q.pairs ? 1 : q.columns ? 2 : 0);  // the layout
  put_array(w, q.data), put_array(w, q.col_sum), put_array(w, q.scale);
}

void put_node(SectionWriter& w, const Node& n, const DroppedShapes& dropped) {
  w.put<uint32_t>(n.origin);
  w.put<uint32_t>((n.qconv_grouped ? 1u : 0u) | (n.winograd ? 2u : 0u) | (n.winograd1d ? 4u : 0u));
  put_array(w, n.bias);
  const bool was_dropped = n.packed.empty() && n.origin < dropped.size() && !dropped[n.origin].empty();
  w.put<uint64_t>(was_dropped ? dropped[n.origin].size() : n.packed.size());
  if (was_dropped) {
    for (auto& s : dropped[n.origin])
      w.put<int64_t>(s.first), w.put<int64_t>(s.second), w.put<uint64_t>(0), put_array(w, PackedArray<float>());
  } else {
    for (const PackedB& b : n.packed) {
      w.put<int64_t>(b.K), w.put<int64_t>(b.N), w.put<uint64_t>(b.half.empty() ? 0 : 1);
      if (b.half.empty()) put_array(w, b.data);
      else put_array(w, b.half);
    }
  }
  put_q8(w, n.qpacked);
  w.put<uint64_t>(n.qconv.size());
  for (const PackedQ8& q : n.qconv) put_q8(w, q);
  w.put<uint64_t>(n.qblocks.size());
  for (const PackedQ8& q : n.qblocks) put_q8(w, q);
  const PackedQB4& b = n.qb4;
  w.put<int64_t>(b.K), w.put<int64_t>(b.N), w.put<int64_t>(b.bs), w.put<uint64_t>(b.f32_scales);
  put_array(w, b.data);
  w.put<int64_t>(n.qdw.taps), w.put<int64_t>(n.qdw.C);
  put_array(w, n.qdw.w), put_array(w, n.qdw.scale);
}

// Bounds-checked reading of a section.
struct Reader {
  const uint8_t* base;
  size_t n, at = 0;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (!ok || n - at < sizeof(T)) return ok = false, v;
    std::memcpy(&v, base + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  void align(size_t a) {
    const size_t pad = (a - at % a) % a;
    if (n - at < pad) ok = false;
    else at += pad;
  }
  template <typename T, typename Alloc>
  void array(PackedArray<T, Alloc>& a, uint64_t expect) {
    const uint64_t count = get<uint64_t>();
    align(64);
    if (!ok || count != expect || count > (n - at) / sizeof(T)) return void(ok = false);
    a.set_view(reinterpret_cast<const T*>(base + at), (size_t)count);
    at += (size_t)count * sizeof(T);
    align(8);
  }
};

bool dims_ok(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a <= (int64_t(1) << 31) && b <= (int64_t(1) << 31); }
int64_t panels(int64_t N) { return (N + 15) / 16; }

bool get_q8(Reader& r, PackedQ8& q) {
  q.K = r.get<int64_t>(), q.N = r.get<int64_t>(), q.Kp = r.get<int64_t>();
  const uint64_t layout = r.get<uint64_t>();
  if (!r.ok || !dims_ok(q.K, q.N) || q.Kp != (q.K + 3) / 4 * 4 || layout > 2) return false;
  q.pairs = layout == 1;
  q.columns = layout == 2;
  r.array(q.data, (uint64_t)(panels(q.N) * 16 * q.Kp));
  r.array(q.col_sum, (uint64_t)(panels(q.N) * 16));
  r.array(q.scale, (uint64_t)(panels(q.N) * 16));
  return r.ok;
}

bool get_node(Reader& r, Node& n) {
  const uint32_t flags = r.get<uint32_t>();
  if (flags > 7 || (flags & 6u) == 6u) return false;
  n.qconv_grouped = flags & 1u;
  n.winograd = flags & 2u;
  n.winograd1d = flags & 4u;
  const uint64_t nbias = r.get<uint64_t>();
  r.align(64);
  if (!r.ok || nbias > (r.n - r.at) / sizeof(float)) return false;
  n.bias.resize((size_t)nbias);
  std::memcpy(n.bias.data(), r.base + r.at, (size_t)nbias * sizeof(float));  // (a copy: plain vector)
  r.at += (size_t)nbias * sizeof(float);
  r.align(8);
  const uint64_t np = r.get<uint64_t>();
  if (!r.ok || np > 1u << 20) return false;
  n.packed.resize((size_t)np);
  for (PackedB& b : n.packed) {
    b.K = r.get<int64_t>(), b.N = r.get<int64_t>();
    const uint64_t half = r.get<uint64_t>();
    if (!r.ok || !dims_ok(b.K, b.N) || half > 1) return false;
    // (a placeholder holds no data: pack_deferred's)
    const uint64_t count = r.get<uint64_t>();
    if (!r.ok) return false;
    r.at -= sizeof(uint64_t);
    const uint64_t want = count == 0 ? 0 : (uint64_t)(panels(b.N) * 16 * b.K);
    if (half) r.array(b.half, want);
    else r.array(b.data, want);
  }
  if (!r.ok || !get_q8(r, n.qpacked)) return false;
  for (std::vector<PackedQ8>* v : {&n.qconv, &n.qblocks}) {
    const uint64_t c = r.get<uint64_t>();
    if (!r.ok || c > 1u << 20) return false;
    v->resize((size_t)c);
    for (PackedQ8& q : *v)
      if (!get_q8(r, q)) return false;
  }
  PackedQB4& b = n.qb4;
  b.K = r.get<int64_t>(), b.N = r.get<int64_t>(), b.bs = r.get<int64_t>();
  const uint64_t f32 = r.get<uint64_t>();
  if (!r.ok || !dims_ok(b.K, b.N) || !dims_ok(b.bs, 0) || f32 > 1 || (b.N > 0 && b.bs == 0)) return false;
  uint64_t qb4_bytes = 0;
  if (b.N > 0 && b.K > 0) {  // (the derived fields as pack_qb4 sets them)
    if (b.bs > kQb4MaxBlock) return false;
    b.f32_scales = f32 == 1;
    b.set_layout();
    qb4_bytes = (uint64_t)(b.panels * b.panel_bytes);
  } else if (b.N != 0 || b.K != 0) {
    return false;
  }
  r.array(b.data, qb4_bytes);
  PackedDwQ8& d = n.qdw;
  d.taps = r.get<int64_t>(), d.C = r.get<int64_t>();
  if (!r.ok || !dims_ok(d.taps, d.C)) return false;
  const int64_t Cp = (d.C + 15) / 16 * 16;  // (depthwise_q8.cpp's padded_channels)
  r.array(d.w, (uint64_t)(d.taps * Cp));
  r.array(d.scale, d.taps > 0 ? (uint64_t)Cp : 0);
  return r.ok;
}

// The packed forms' dimensions against the node's (what the kernels index by).
bool fits(const Graph& g, const Node& n) {
  // the bias: a copy of the node's constant bias, as prepare_node makes it
  const Value* b = n.inputs.size() > 2 && n.inputs[2] < g.values.size() ? &g.values[n.inputs[2]] : nullptr;
  const bool has_bias = b && b->is_constant &&
                        (n.type == FullyConnected || n.type == Conv2d || n.type == DepthwiseConv2d || n.type == ConvTranspose2d);
  if (n.bias.size() != (has_bias ? b->data.size() : 0)) return false;
  if (n.inputs.size() < 2 || n.inputs[1] >= g.values.size()) return n.packed.empty() && n.qpacked.N == 0;
  const Value& w = g.values[n.inputs[1]];
  int64_t K = 0, N = 0;
  if (n.type == FullyConnected && w.dims.size() == 2) {
    const bool tw = n.flags & kTransposeWeights;
    K = tw ? w.dims[0] : w.dims[1], N = tw ? w.dims[1] : w.dims[0];
  } else if (n.type == Conv2d && n.winograd) {  // 16 transformed filters, [IC x OC] each (xnn_winograd.cpp)
    if (!winograd_geometry(n) || n.packed.size() != 16)
      return false;
    K = n.group_in, N = n.group_out;
    return std::all_of(n.packed.begin(), n.packed.end(), [&](const PackedB& b) { return b.K == K && b.N == N && b.half.empty(); }) &&
           n.qpacked.N == 0 && n.qconv.empty() && n.qblocks.empty() && n.qb4.N == 0;
  } else if (n.type == Conv2d && n.winograd1d) {  // 5 transformed filters, [P * IC x OC] each, or the direct one (xnn_winograd.cpp)
    const int64_t taps = winograd1d_taps(n);
    if (!taps || (n.packed.size() != 5 && n.packed.size() != 1)) return false;
    K = (n.packed.size() == 1 ? taps : (taps + 2) / 3) * n.group_in, N = n.group_out;
    return std::all_of(n.packed.begin(), n.packed.end(), [&](const PackedB& b) { return b.K == K && b.N == N && b.half.empty(); }) &&
           n.qpacked.N == 0 && n.qconv.empty() && n.qblocks.empty() && n.qb4.N == 0;
  } else if (n.type == Conv2d) {
    K = (int64_t)n.kh * n.kw * n.group_in, N = n.group_out;
  } else if (n.type == DepthwiseConv2d) {
    if (n.qdw.taps > 0 && (n.qdw.taps != (int64_t)n.kh * n.kw || w.dims.size() != 4 || n.qdw.C != w.dims[3])) return false;
    return n.packed.empty() && n.qpacked.N == 0 && n.qconv.empty() && n.qblocks.empty() && n.qb4.N == 0;
  } else if (n.type == ConvTranspose2d) {  // one packing per (group, row phase, column phase): xnn_deconv.cpp
    if (n.sh == 0 || n.sw == 0 || n.packed.size() != (size_t)n.groups * n.sh * n.sw) return false;
    auto taps = [](int64_t k, int64_t d, int64_t s, int64_t r) {
      int64_t c = 0;
      for (int64_t i = 0; i < k; i++) c += (i * d) % s == r;
      return c;
    };
    size_t at = 0;
    for (uint32_t gi = 0; gi < n.groups; gi++)
      for (uint32_t rh = 0; rh < n.sh; rh++)
        for (uint32_t rw = 0; rw < n.sw; rw++, at++) {
          const PackedB& b = n.packed[at];
          if (b.K != taps(n.kh, n.dh, n.sh, rh) * taps(n.kw, n.dw, n.sw, rw) * (int64_t)n.group_in ||
              b.N != (int64_t)n.group_out)
            return false;
        }
    return n.qpacked.N == 0 && n.qconv.empty() && n.qblocks.empty() && n.qb4.N == 0;  // (sizes checked per phase / tap)
  } else {
    return !has_state(n) || (n.packed.empty() && n.qpacked.N == 0 && n.qconv.empty() && n.qb4.N == 0);
  }
  for (const PackedB& b : n.packed)
    if (b.K != K || b.N != N) return false;
  if (n.qpacked.N > 0 && (n.qpacked.K != K || n.qpacked.N != N)) return false;
  if (n.qb4.N > 0 && (n.qb4.K != K || n.qb4.N != N)) return false;
  if (!n.qconv_grouped)
    for (const PackedQ8& q : n.qconv)
      if (q.K != K || q.N != N) return false;
  if (n.qconv_grouped && (n.qconv.size() != 1 || n.qconv[0].K != K || n.qconv[0].N != (int64_t)n.groups * N))
    return false;
  int64_t kb = 0;
  for (const PackedQ8& q : n.qblocks) {
    if (q.N != N) return false;
    kb += q.K;
  }
  return n.qblocks.empty() || kb == K;
}

}  // namespace

uint64_t weight_cache_key(Span blob, const std::vector<Span>& unkeyed) {
  ContentHash h;
  const uint32_t head[3] = {kSectionVersion, (uint32_t)fusion_mode(), winograd_enabled() ? 1u : 0u};
  h.update(head, sizeof head);
  h.update(blob.data, blob.size);
  for (const Span& s : unkeyed) {
    const uint64_t size = s.size;
    h.update(&size, sizeof size);
    h.update(s.data, s.size);
  }
  return h.value();
}

void write_packed_state(SectionWriter& w, const Graph& g, const DroppedShapes& dropped) {
  std::vector<const Node*> nodes;
  for (const Node& n : g.nodes)
    for (const Node* p : {&n, (const Node*)n.pre.get(), (const Node*)n.post.get()})
      if (p && (has_state(*p) || (p->origin < dropped.size() && !dropped[p->origin].empty()))) nodes.push_back(p);
  w.put<uint32_t>(kSectionVersion);
  w.put<uint32_t>((uint32_t)nodes.size());
  for (const Node* p : nodes) put_node(w, *p, dropped);
}

bool read_packed_state(const uint8_t* p, size_t size, Graph& g) {
  Reader r{p, size};
  if (r.get<uint32_t>() != kSectionVersion) return false;
  const uint32_t count = r.get<uint32_t>();
  if (!r.ok || count > g.nodes.size()) return false;
  std::vector<Node> got;  // (whole nodes for their packed fields only)
  std::vector<uint32_t> at;
  got.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    const uint32_t origin = r.get<uint32_t>();
    if (!r.ok || origin >= g.nodes.size()) return false;
    for (uint32_t o : at)
      if (o == origin) return false;
    Node n;
    const Node& t = g.nodes[origin];
    n.type = t.type, n.inputs = t.inputs, n.flags = t.flags, n.kh = t.kh, n.kw = t.kw, n.group_in = t.group_in;
    n.group_out = t.group_out, n.groups = t.groups, n.sh = t.sh, n.sw = t.sw, n.dh = t.dh, n.dw = t.dw;
    n.pad_top = t.pad_top, n.pad_right = t.pad_right, n.pad_bottom = t.pad_bottom, n.pad_left = t.pad_left;
    if (!get_node(r, n) || !fits(g, n)) return false;
    at.push_back(origin);
    got.push_back(std::move(n));
  }
  if (r.at != size) return false;
  for (size_t i = 0; i < got.size(); i++) {
    Node& d = g.nodes[at[i]];
    Node& s = got[i];
    d.packed = std::move(s.packed), d.qpacked = std::move(s.qpacked), d.qconv = std::move(s.qconv);
    d.qconv_grouped = s.qconv_grouped, d.qblocks = std::move(s.qblocks), d.qb4 = std::move(s.qb4);
    d.qdw = std::move(s.qdw), d.bias = std::move(s.bias), d.winograd = s.winograd;
    d.winograd1d = s.winograd1d;
  }
  return true;
}

}  // namespace etnp::xnn
