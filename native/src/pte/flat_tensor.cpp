#include "pte/flat_tensor.h"

#include <cstring>

#include "core/error.h"

namespace etnp {

FlatTensorFile::FlatTensorFile(const void* data, size_t size, std::string label)
    : bytes_((const uint8_t*)data, (const uint8_t*)data + size), label_(std::move(label)) {
  auto bad = [&](const std::string& m) { throw_load("data file " + label_ + ": " + m); };
  if (bytes_.size() < 48 || std::memcmp(bytes_.data() + 4, "FT01", 4) != 0)
    bad("not an ExecuTorch FlatTensor (.ptd) file (no 'FT01' identifier at byte 4)");
  if (std::memcmp(bytes_.data() + 8, "FH01", 4) != 0) bad("no 'FH01' extended header");
  fb::Buffer hb{bytes_.data(), bytes_.size(), "FlatTensor header"};
  uint32_t hlen = hb.read<uint32_t>(12);
  if (hlen < 40) bad("extended header length " + std::to_string(hlen) + " is below 40");
  hb.check(8, hlen);
  uint64_t fb_off = hb.read<uint64_t>(16), fb_size = hb.read<uint64_t>(24);
  uint64_t seg_base = hb.read<uint64_t>(32), seg_size = hb.read<uint64_t>(40);
  if (fb_off > bytes_.size() || fb_size > bytes_.size() - fb_off) bad("flatbuffer lies outside the file (truncated?)");
  if (seg_base > bytes_.size() || seg_size > bytes_.size() - seg_base)
    bad("segment data lies outside the file (truncated?)");
  // The root offset at byte 0 is relative to the start of the file (the header sits inside).
  fb::Buffer buf{bytes_.data(), (size_t)(fb_off + fb_size), "FlatTensor flatbuffer"};
  fb::Table root = fb::root(&buf, "FT01");
  fb::Vector segs = root.vector(1, 4);
  fb::Vector named = root.vector(2, 4);
  for (uint32_t i = 0; i < named.size(); i++) {
    fb::Table nd = named.table(i);
    std::string key = nd.string(0);
    uint32_t si = nd.scalar<uint32_t>(1);
    if (si >= segs.size()) bad("key '" + key + "' names segment " + std::to_string(si) + " of " + std::to_string(segs.size()));
    fb::Table s = segs.table(si);
    uint64_t off = s.scalar<uint64_t>(0), sz = s.scalar<uint64_t>(1);
    if (off > seg_size || sz > seg_size - off) bad("key '" + key + "' lies outside the segment data (truncated?)");
    for (const Entry& e : entries_)
      if (e.key == key) bad("key '" + key + "' appears twice");
    entries_.push_back(Entry{key, (size_t)(seg_base + off), (size_t)sz});
  }
}

const uint8_t* FlatTensorFile::find(const std::string& key, size_t* size) const {
  for (const Entry& e : entries_)
    if (e.key == key) {
      *size = e.size;
      return bytes_.data() + e.offset;
    }
  *size = 0;
  return nullptr;
}

}  // namespace etnp
