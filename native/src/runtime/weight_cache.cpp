// The weight cache file: header, section table, hashes, writing (see weight_cache.h).
#include "runtime/weight_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/compute/cpu_features.h"
#include "os/cpu_id.h"

namespace etnp {

namespace {

constexpr char kMagic[8] = {'E', 'T', 'N', 'P', 'W', 'C', '\r', '\n'};
constexpr uint32_t kFormatVersion = 1;
// Bumped whenever a packed layout (gemm.h, qgemm.h, qgemm_qb4.h, depthwise_q8.h) or what a
// delegate stores in its section changes: files written by other builds are then misses.
// 3: per-channel 4-bit filters (qd8 x qc4w) packed as 4-bit (qgemm_qb4.h, one block of all K),
// where earlier builds stored a float packing of them (the layouts themselves are unchanged)
constexpr uint32_t kPackingVersion = 3;
constexpr uint32_t kByteOrder = 0x01020304u;

struct Header {  // 64 bytes, at offset 0
  char magic[8];
  uint32_t format_version, packing_version, byte_order, pointer_bits;
  uint64_t cpu_key, sections, table_offset, file_size, hash;  // hash: of the header (hash 0) and the table
};
static_assert(sizeof(Header) == 64, "header layout");

}  // namespace

void SectionWriter::bytes(const void* p, size_t n) {
  if (out_ && n) out_->write(p, n);
  if (hash_ && n) hash_->update(p, n);
  size_ += n;
}

void SectionWriter::align(size_t a) {
  static const uint8_t zeros[64] = {};
  const size_t pad = (size_t)((a - size_ % a) % a);
  bytes(zeros, pad);
}

uint64_t weight_cache_cpu_key() {
  std::string s = cpu_features_string();
  // (the AMX paths read the packed layouts of the AVX-512 VNNI path, aarch64's dot-product
  // kernels those of its base NEON ones: the same key, so that a cache written under
  // ETNP_CPU=avx512 / neon serves the native path; a path with a layout of its own must change this)
  for (const std::string tail : {",amx-int8", ",dotprod"})
    if (s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0) s.resize(s.size() - tail.size());
  if (cpu_has_avx512f() && os::cpu_id().avx512vnni) s += ",vnni";
  return ContentHash::of(s.data(), s.size());
}

WeightCacheSession::WeightCacheSession(std::string path) : path_(std::move(path)) {
  map_ = os::ReadOnlyMapping::open(path_);
  if (map_ && !parse()) {
    map_.reset();
    entries_.clear();
  }
  checked_.assign(entries_.size(), 0);
}

bool WeightCacheSession::parse() {
  const uint8_t* p = map_->data();
  const uint64_t size = map_->size();
  auto reject = [&](const char* why) {
    rejected_ = why;
    return false;
  };
  if (size < sizeof(Header)) return reject("truncated header");
  Header h;
  std::memcpy(&h, p, sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0) return reject("not a weight cache file");
  if (h.format_version != kFormatVersion || h.packing_version != kPackingVersion)
    return reject("written by another version");
  if (h.byte_order != kByteOrder || h.pointer_bits != 8 * sizeof(void*)) return reject("written on another platform");
  if (h.cpu_key != weight_cache_cpu_key()) return reject("written for another CPU path");
  if (h.file_size != size) return reject("truncated or extended");
  if (h.table_offset < sizeof(Header) || h.table_offset > size || h.sections > (size - h.table_offset) / sizeof(Entry) ||
      h.table_offset + h.sections * sizeof(Entry) != size)
    return reject("bad section table");
  Header zeroed = h;
  zeroed.hash = 0;
  ContentHash hh;
  hh.update(&zeroed, sizeof zeroed);
  hh.update(p + h.table_offset, (size_t)(h.sections * sizeof(Entry)));
  if (hh.value() != h.hash) return reject("header or table damaged");
  entries_.resize((size_t)h.sections);
  if (h.sections) std::memcpy(entries_.data(), p + h.table_offset, entries_.size() * sizeof(Entry));
  for (const Entry& e : entries_)
    if (e.offset < sizeof(Header) || e.offset % 64 || e.offset > h.table_offset || e.size > h.table_offset - e.offset)
      return reject("bad section bounds");
  return true;
}

WeightCacheSession::Section WeightCacheSession::find(uint64_t key) {
  for (size_t i = 0; i < entries_.size(); i++) {
    const Entry& e = entries_[i];
    if (e.key != key) continue;
    if (checked_[i] == 0)
      checked_[i] = ContentHash::of(map_->data() + e.offset, (size_t)e.size) == e.hash ? 1 : -1;
    if (checked_[i] < 0) {
      rejected_ = "a section is damaged";
      continue;
    }
    return {map_->data() + e.offset, (size_t)e.size};
  }
  return {};
}

void WeightCacheSession::add(uint64_t key, std::function<void(SectionWriter&)> write) {
  added_.emplace_back(key, std::move(write));
}

bool WeightCacheSession::finish() noexcept {
  if (added_.empty()) return false;
  try {
    // the old file's sections of other keys (those checked out, or not yet checked: checked now)
    std::vector<Entry> keep;
    for (size_t i = 0; i < entries_.size(); i++) {
      bool replaced = false;
      for (auto& a : added_) replaced = replaced || a.first == entries_[i].key;
      for (const Entry& k : keep) replaced = replaced || k.key == entries_[i].key;
      if (replaced) continue;
      const Entry& e = entries_[i];
      if (checked_[i] == 0)
        checked_[i] = ContentHash::of(map_->data() + e.offset, (size_t)e.size) == e.hash ? 1 : -1;
      if (checked_[i] > 0) keep.push_back(e);
    }
    std::vector<Entry> table;
    uint64_t at = sizeof(Header);
    auto place = [&](uint64_t key, uint64_t size, uint64_t hash) {
      at = (at + 63) / 64 * 64;
      table.push_back(Entry{key, at, size, hash});
      at += size;
    };
    for (const Entry& e : keep) place(e.key, e.size, e.hash);
    for (auto& a : added_) {  // (measured and hashed first: the header, written first, covers the table)
      ContentHash ch;
      SectionWriter m;
      m.hash_ = &ch;
      a.second(m);
      place(a.first, m.size(), ch.value());
    }
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.format_version = kFormatVersion;
    h.packing_version = kPackingVersion;
    h.byte_order = kByteOrder;
    h.pointer_bits = 8 * sizeof(void*);
    h.cpu_key = weight_cache_cpu_key();
    h.sections = table.size();
    h.table_offset = at;
    h.file_size = at + table.size() * sizeof(Entry);
    ContentHash hh;
    hh.update(&h, sizeof h);
    hh.update(table.data(), table.size() * sizeof(Entry));
    h.hash = hh.value();
    os::AtomicFileWriter out(path_);
    if (!out.open() || !out.write(&h, sizeof h)) return false;
    uint64_t pos = sizeof(Header);
    static const uint8_t zeros[64] = {};
    for (size_t i = 0; i < table.size(); i++) {
      const Entry& e = table[i];
      if (!out.write(zeros, (size_t)(e.offset - pos))) return false;
      if (i < keep.size()) {
        if (!out.write(map_->data() + keep[i].offset, (size_t)e.size)) return false;
      } else {
        ContentHash ch;
        SectionWriter w;
        w.out_ = &out;
        w.hash_ = &ch;
        added_[i - keep.size()].second(w);
        if (w.size() != e.size || ch.value() != e.hash) return false;  // (not the bytes measured)
      }
      pos = e.offset + e.size;
    }
    if (!out.write(table.data(), table.size() * sizeof(Entry))) return false;
    return out.commit();
  } catch (...) {
    return false;
  }
}

}  // namespace etnp
