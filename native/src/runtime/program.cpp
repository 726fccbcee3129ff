#include "runtime/program.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "os/file_source.h"
#include "os/pages.h"
#include "os/probes.h"
#include "util/content_hash.h"

namespace etnp {

namespace {
constexpr size_t kHeaderOffset = 8;
constexpr size_t kMinExtHeader = 24;

// Program table fields (program.fbs)
enum { P_VERSION = 0, P_PLANS = 1, P_CONST_BUFFER = 2, P_DELEGATE_DATA = 3, P_SEGMENTS = 4,
       P_CONST_SEGMENT = 5, P_MUTABLE_SEGMENTS = 6, P_NAMED_DATA = 7 };
}  // namespace

std::vector<Span> merge_nearby(std::vector<Span> spans, size_t gap) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.data < b.data; });
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!s.data) continue;
    if (!out.empty() && s.data <= out.back().data + out.back().size + gap) {
      const uint8_t* end = std::max(out.back().data + out.back().size, s.data + s.size);
      out.back().size = (size_t)(end - out.back().data);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

std::shared_ptr<Program> Program::from_bytes(std::shared_ptr<Runtime> rt, const void* data, size_t size) {
  ETNP_PROBE2(program_load_begin, "<bytes>", (uint64_t)size);
  try {
    std::shared_ptr<Program> p(new Program());
    p->runtime_ = std::move(rt);
    p->owned_.assign((const uint8_t*)data, (const uint8_t*)data + size);
    p->file_ = p->owned_.data();
    p->file_size_ = size;
    p->parse();
    ETNP_PROBE3(program_load_end, "<bytes>", (uint64_t)size, 0);
    return p;
  } catch (...) {
    ETNP_PROBE3(program_load_end, "<bytes>", (uint64_t)size, (int)current_exception_status());
    throw;
  }
}

namespace {
// How much of a file load_program reads at once: kReadAtOnce, or ETNP_READ_AT_ONCE bytes (a
// test's knob: small values send small programs through the partial reads too)
size_t read_at_once() {
  static const size_t n = [] {
    const char* e = std::getenv("ETNP_READ_AT_ONCE");
    char* end = nullptr;
    const unsigned long long v = e && *e ? std::strtoull(e, &end, 10) : 0;
    return e && *e && end && *end == 0 && v > 0 ? (size_t)v : Program::kReadAtOnce;
  }();
  return n;
}
}  // namespace

std::shared_ptr<Program> Program::from_file(std::shared_ptr<Runtime> rt, const std::string& path, bool map) {
  ETNP_PROBE2(program_load_begin, path.c_str(), (uint64_t)0);  // (the size is not known yet)
  uint64_t size = 0;
  try {
    std::shared_ptr<Program> p(new Program());
    p->runtime_ = std::move(rt);
    if (map) {
      p->map_ = os::FileMapping::open(path);
      p->file_ = p->map_->data();
      p->file_size_ = p->map_->size();
    } else {
      // (what lies past the first kReadAtOnce bytes is read when first needed - ensure, borrow -:
      // a weight that only feeds packing is never resident, read from the file into the packer's
      // scratch instead)
      p->read_ = os::read_file(path, read_at_once());
      p->file_ = p->read_->data();
      p->file_size_ = p->read_->size();
      if (p->read_->filled() < p->file_size_) {
        p->released_.push_back(Released{p->read_->filled(), p->file_size_ - p->read_->filled(), 0, true});
        p->any_released_.store(true, std::memory_order_release);
      }
    }
    size = p->file_size_;
    p->path_ = path;
    p->parse();
    ETNP_PROBE3(program_load_end, path.c_str(), size, 0);
    return p;
  } catch (...) {
    ETNP_PROBE3(program_load_end, path.c_str(), size, (int)current_exception_status());
    throw;
  }
}

Program::~Program() = default;

uint64_t Program::resident_bytes() const {
  return (read_ || map_ ? file_size_ : owned_.capacity()) - released_bytes();
}

namespace {
bool release_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("ETNP_RELEASE_PROGRAM_BYTES");
    return !(e && (std::strcmp(e, "off") == 0 || std::strcmp(e, "0") == 0));
  }();
  return on;
}
}  // namespace

void Program::protect(Span s) const {
  if (!s.data || s.data < file_ || s.data >= file_ + file_size_) return;
  ensure(s);
  std::lock_guard<std::mutex> g(release_mu_);
  const size_t b = (size_t)(s.data - file_);
  protected_.emplace_back(b, b + std::min(s.size, file_size_ - b));
}

void Program::unprotect(Span s) const {
  if (!s.data || s.data < file_ || s.data >= file_ + file_size_) return;
  std::lock_guard<std::mutex> g(release_mu_);
  const size_t b = (size_t)(s.data - file_);
  const std::pair<size_t, size_t> r(b, b + std::min(s.size, file_size_ - b));
  auto it = std::find(protected_.begin(), protected_.end(), r);
  if (it != protected_.end()) protected_.erase(it);
}

void Program::release(Span s) const {
  if (path_.empty() || !release_enabled() || !s.data || s.data < file_ || s.data >= file_ + file_size_) return;
  const size_t page = os::page_size();
  size_t b = (size_t)(s.data - file_), e = b + std::min(s.size, file_size_ - b);
  // whole pages of the file (its bytes start page-aligned in both the copy and the mapping)
  b = (b + page - 1) / page * page;
  e = e / page * page;
  const size_t least = (size_t)16 * page;  // (small ranges are not worth a record)
  if (e <= b || e - b < least) return;
  std::lock_guard<std::mutex> g(release_mu_);
  // the parts of [b, e) neither protected nor given back already (a delegate gives back each
  // filter once packed, the method its whole blob once loaded)
  std::vector<std::pair<size_t, size_t>> held;
  for (const auto& pr : protected_)
    if (pr.first < e && b < pr.second) held.push_back(pr);
  for (const Released& r : released_)
    if (r.offset < e && b < r.offset + r.size) held.emplace_back(r.offset, r.offset + r.size);
  std::sort(held.begin(), held.end());
  held.emplace_back(e, e);
  size_t at = b;
  for (const auto& h : held) {
    const size_t gb = at, ge = std::min(e, h.first) / page * page;
    at = std::max(at, (h.second + page - 1) / page * page);
    if (ge <= gb || ge - gb < least) continue;
    // (a mapping reads its pages back from the file by itself, as mmap=True promises: unchecked)
    const uint64_t hash = map_ ? 0 : ContentHash::of(file_ + gb, ge - gb);
    if (os::release_pages(file_ + gb, ge - gb) != ge - gb) continue;
    released_.push_back(Released{gb, ge - gb, hash});
    any_released_.store(true, std::memory_order_release);
  }
}

void Program::throw_changed(const Released& r) const {
  throw_load("'" + path_ + "' changed since the program was loaded: bytes it " +
             (r.unread ? std::string("had not read yet (") : std::string("gave back after packing (")) +
             std::to_string(r.size) + " at offset " + std::to_string(r.offset) + ") cannot be read; load the program again");
}

void Program::read_back(const Released& r) const {
  if (map_) return;  // a mapping's pages come back from the file by themselves
  uint8_t* at = const_cast<uint8_t*>(file_) + r.offset;
  if (!read_->copy_out(r.offset, at, r.size) || ContentHash::of(at, r.size) != r.hash) throw_changed(r);
}

void Program::ensure(Span s) const {
  if (!any_released_.load(std::memory_order_acquire) || !s.data || s.data < file_ || s.data >= file_ + file_size_) return;
  const size_t b = (size_t)(s.data - file_), e = b + std::min(s.size, file_size_ - b);
  const size_t page = os::page_size();
  std::lock_guard<std::mutex> g(release_mu_);
  for (size_t i = 0; i < released_.size();) {
    const Released r = released_[i];
    if (!(r.offset < e && b < r.offset + r.size)) {
      i++;
      continue;
    }
    if (!r.unread) {
      read_back(r);  // (throws with the range still given back: never read unchecked later)
      released_.erase(released_.begin() + (std::ptrdiff_t)i);
      continue;
    }
    // an unread range: its pages that [b, e) touches are read into place, the rest stays unread
    // (page-aligned pieces, pushed past i: they do not overlap [b, e))
    const size_t fb = std::max(r.offset, b / page * page), fe = std::min(r.offset + r.size, (e + page - 1) / page * page);
    if (!read_->fill(fb, fe - fb)) throw_changed(r);
    released_.erase(released_.begin() + (std::ptrdiff_t)i);
    if (fb > r.offset) released_.push_back(Released{r.offset, fb - r.offset, 0, true});
    if (fe < r.offset + r.size) released_.push_back(Released{fe, r.offset + r.size - fe, 0, true});
  }
}

const uint8_t* Program::borrow(Span s, const std::function<uint8_t*()>& room) const {
  if (!read_ || !any_released_.load(std::memory_order_acquire) || !s.data || s.data < file_ ||
      s.data >= file_ + file_size_) {
    ensure(s);
    return s.data;
  }
  const size_t b = (size_t)(s.data - file_), e = b + std::min(s.size, file_size_ - b);
  std::vector<std::pair<size_t, size_t>> unread;  // [begin, end) inside [b, e)
  {
    std::lock_guard<std::mutex> g(release_mu_);
    bool given_back = false;
    for (const Released& r : released_)
      if (r.offset < e && b < r.offset + r.size) {
        if (r.unread) unread.emplace_back(std::max(b, r.offset), std::min(e, r.offset + r.size));
        else given_back = true;
      }
    if (!given_back && unread.empty()) return s.data;  // (all resident)
    if (!given_back) {
      // the resident parts copied, the unread ones read from the file (never made resident)
      std::sort(unread.begin(), unread.end());
      uint8_t* const scratch = room();
      size_t at = b;
      for (const auto& u : unread) {
        std::memcpy(scratch + (at - b), file_ + at, u.first - at);
        if (!read_->copy_out(u.first, scratch + (u.first - b), u.second - u.first))
          throw_changed(Released{u.first, u.second - u.first, 0, true});
        at = u.second;
      }
      std::memcpy(scratch + (at - b), file_ + at, e - at);
      return scratch;
    }
  }
  ensure(s);  // (partly given back after packing: read back in place, checked)
  return s.data;
}

uint64_t Program::released_bytes() const {
  std::lock_guard<std::mutex> g(release_mu_);
  uint64_t n = 0;
  for (const Released& r : released_) n += r.size;
  return n;
}

Span Program::bytes() const {
  ensure(Span{file_, file_size_});
  return {file_, file_size_};
}
uint64_t Program::data_file_bytes() const {
  uint64_t n = 0;
  for (const auto& f : data_files_) n += f->size();
  return n;
}

void Program::parse() {
  if (file_size_ < 8) throw_load("file is " + std::to_string(file_size_) + " bytes: too small to be a .pte program");
  ensure(Span{file_, std::min<size_t>(file_size_, kHeaderOffset + 32)});  // (the extended header's fields)
  if (std::memcmp(file_ + 4, "ET", 2) != 0)
    throw_load("not an ExecuTorch program (no 'ET' file identifier at byte 4)");
  if (std::memcmp(file_ + 4, "ET12", 4) != 0)
    throw_load("program file identifier is '" + std::string((const char*)file_ + 4, 4) +
               "': this runtime reads ExecuTorch 1.3.1 programs ('ET12'); re-export with executorch 1.3.1");
  size_t program_size = file_size_;
  segment_base_ = 0;
  if (file_size_ >= kHeaderOffset + 8 && std::memcmp(file_ + kHeaderOffset, "eh00", 4) == 0) {
    fb::Buffer hb{file_, file_size_, "extended header"};
    uint32_t hlen = hb.read<uint32_t>(kHeaderOffset + 4);
    if (hlen < kMinExtHeader) throw_load("extended header length " + std::to_string(hlen) + " is below the minimum of 24");
    hb.check(kHeaderOffset, hlen);
    uint64_t psize = hb.read<uint64_t>(kHeaderOffset + 8);
    uint64_t sbase = hb.read<uint64_t>(kHeaderOffset + 16);
    if (psize < 8 || psize > file_size_)
      throw_load("extended header: program size " + std::to_string(psize) + " exceeds the file size " +
                 std::to_string(file_size_) + " (truncated file?)");
    if (sbase > file_size_) throw_load("extended header: segment base offset is past the end of the file (truncated file?)");
    if (hlen >= 32) {
      uint64_t sdata = hb.read<uint64_t>(kHeaderOffset + 24);
      if (sdata > file_size_ - sbase)
        throw_load("extended header: segment data (" + std::to_string(sdata) + " bytes at " + std::to_string(sbase) +
                   ") runs past the end of the file (truncated file?)");
    }
    program_size = (size_t)psize;
    segment_base_ = sbase;
  }
  ensure(Span{file_, program_size});
  fbuf_ = fb::Buffer{file_, program_size, "program flatbuffer"};
  root_ = fb::root(&fbuf_, nullptr);

  fb::Vector segs = root_.vector(P_SEGMENTS, 4);
  for (uint32_t i = 0; i < segs.size(); i++) {
    fb::Table s = segs.table(i);
    uint64_t off = s.scalar<uint64_t>(0), size = s.scalar<uint64_t>(1);
    uint64_t avail = file_size_ - segment_base_;
    if (off > avail || size > avail - off)
      throw_load("segment " + std::to_string(i) + " (offset " + std::to_string(off) + ", " + std::to_string(size) +
                 " bytes) lies outside the file (truncated file?)");
    segments_.push_back(Span{file_ + segment_base_ + off, (size_t)size});
  }
  fb::Vector plans = root_.vector(P_PLANS, 4);
  if (plans.empty()) throw_load("program has no execution plans (methods)");
  for (uint32_t i = 0; i < plans.size(); i++) {
    std::string n = plans.table(i).string(0);
    if (n.empty()) throw_load("execution plan " + std::to_string(i) + " has no name");
    method_names_.push_back(n);
  }
  // Validate the constant segment reference now so that errors surface at load.
  fb::Table cs = root_.table(P_CONST_SEGMENT);
  if (cs && !cs.vector(1, 8).empty()) segment(cs.scalar<uint32_t>(0), false);
}

fb::Table Program::plan(const std::string& name) const {
  fb::Vector plans = root_.vector(P_PLANS, 4);
  for (uint32_t i = 0; i < plans.size(); i++)
    if (method_names_[i] == name) return plans.table(i);
  std::string all;
  for (auto& n : method_names_) all += (all.empty() ? "" : ", ") + n;
  throw Error(ETNP_ERR_INVALID_ARGUMENT, "unknown method '" + name + "'; the program has: " + all, name);
}

Span Program::segment(uint32_t index, bool read) const {
  if (index >= segments_.size())
    throw_load("segment index " + std::to_string(index) + " out of range (" + std::to_string(segments_.size()) +
               " segments)");
  if (read) ensure(segments_[index]);
  return segments_[index];
}

Span Program::inline_delegate_data(uint32_t index) const {
  fb::Vector v = root_.vector(P_DELEGATE_DATA, 4);
  if (index >= v.size()) throw_load("inline delegate data index " + std::to_string(index) + " out of range");
  fb::Vector d = v.table(index).vector(0, 1);
  return Span{d.raw(), d.size()};
}

Span Program::named_data(const std::string& key, bool read) const {
  fb::Vector v = root_.vector(P_NAMED_DATA, 4);
  for (uint32_t i = 0; i < v.size(); i++) {
    fb::Table t = v.table(i);
    if (t.string(0) == key) return segment(t.scalar<uint32_t>(1), read);
  }
  for (const auto& f : data_files_) {
    size_t n = 0;
    if (const uint8_t* d = f->find(key, &n)) return Span{d, n};
  }
  return Span{};
}

std::string Program::data_files_note() const {
  if (data_files_.empty()) return " (no data files were given: load the .ptd with load_program(path, data_files=[...]))";
  std::string s;
  for (const auto& f : data_files_) s += (s.empty() ? "" : ", ") + f->label();
  return " (data files: " + s + ")";
}

Span Program::constant(uint32_t idx, size_t nbytes) const {
  fb::Table cs = root_.table(P_CONST_SEGMENT);
  fb::Vector offs = cs ? cs.vector(1, 8) : fb::Vector();
  if (!offs.empty()) {
    Span seg = segment(cs.scalar<uint32_t>(0), false);
    if (idx >= offs.size()) throw_load("constant index " + std::to_string(idx) + " out of range");
    uint64_t off = offs.at<uint64_t>(idx);
    if (off > seg.size || nbytes > seg.size - off)
      throw_load("constant " + std::to_string(idx) + " (" + std::to_string(nbytes) + " bytes at " + std::to_string(off) +
                 ") lies outside the constant segment");
    const Span c{seg.data + off, nbytes};
    ensure(c);  // (that tensor's bytes only, not the whole segment's)
    return c;
  }
  fb::Vector bufs = root_.vector(P_CONST_BUFFER, 4);
  if (idx >= bufs.size()) throw_load("constant buffer index " + std::to_string(idx) + " out of range");
  fb::Vector st = bufs.table(idx).vector(0, 1);
  if (st.size() < nbytes) throw_load("constant buffer " + std::to_string(idx) + " is smaller than its tensor");
  return Span{st.raw(), nbytes};
}

Span Program::mutable_data(uint32_t idx, size_t nbytes, uint64_t segment_list) const {
  fb::Vector ms = root_.vector(P_MUTABLE_SEGMENTS, 4);
  if (ms.empty()) return Span{};
  if (segment_list >= ms.size())
    throw_load("mutable data segment list " + std::to_string(segment_list) + " out of range");
  fb::Table m = ms.table((uint32_t)segment_list);
  fb::Vector offs = m.vector(1, 8);
  if (idx >= offs.size()) throw_load("mutable data index " + std::to_string(idx) + " out of range");
  Span seg = segment(m.scalar<uint32_t>(0), false);
  uint64_t off = offs.at<uint64_t>(idx);
  if (off > seg.size || nbytes > seg.size - off) throw_load("mutable tensor data lies outside its segment");
  const Span d{seg.data + off, nbytes};
  ensure(d);
  return d;
}

}  // namespace etnp
