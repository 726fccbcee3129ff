// A minimal, bounds-checked flatbuffer reader. Every access is checked against the
// buffer; a violation throws a ProgramLoadError. No generated code, no upstream code.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace etnp::fb {

struct Buffer {
  const uint8_t* data = nullptr;
  size_t size = 0;
  const char* what = "flatbuffer";

  void check(size_t off, size_t len) const {
    if (off > size || len > size - off)
      throw_load(std::string(what) + ": offset " + std::to_string(off) + "+" + std::to_string(len) +
                 " is outside the buffer of " + std::to_string(size) + " bytes (truncated or corrupt)");
  }
  template <typename T>
  T read(size_t off) const {
    check(off, sizeof(T));
    T v;
    std::memcpy(&v, data + off, sizeof(T));
    return v;
  }
};

class Table;

// A vector of scalars, or of offsets to tables/strings.
class Vector {
 public:
  Vector() = default;
  Vector(const Buffer* b, size_t pos, size_t elem) : b_(b), pos_(pos) {
    n_ = b->read<uint32_t>(pos);
    b->check(pos + 4, (size_t)n_ * elem);  // n_ < 2^32, elem <= 8: no overflow on 64-bit
  }
  uint32_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  template <typename T>
  T at(uint32_t i) const {
    bounds(i);
    return b_->read<T>(pos_ + 4 + (size_t)i * sizeof(T));
  }
  const uint8_t* raw() const { return b_ ? b_->data + pos_ + 4 : nullptr; }
  inline Table table(uint32_t i) const;
  inline std::string string(uint32_t i) const;

 private:
  void bounds(uint32_t i) const {
    if (i >= n_) throw_load(std::string(b_->what) + ": vector index out of range");
  }
  const Buffer* b_ = nullptr;
  size_t pos_ = 0;
  uint32_t n_ = 0;
};

class Table {
 public:
  Table() = default;
  Table(const Buffer* b, size_t pos) : b_(b), pos_(pos) {
    int32_t soff = b->read<int32_t>(pos);
    int64_t vt = (int64_t)pos - soff;
    if (vt < 0 || (uint64_t)vt >= b->size) throw_load(std::string(b->what) + ": bad vtable offset");
    vt_ = (size_t)vt;
    vtsize_ = b->read<uint16_t>(vt_);
    tsize_ = b->read<uint16_t>(vt_ + 2);
    if (vtsize_ < 4 || (vtsize_ & 1)) throw_load(std::string(b->what) + ": bad vtable size");
    b->check(vt_, vtsize_);
    b->check(pos_, tsize_ < 4 ? 4 : tsize_);
  }
  bool valid() const { return b_ != nullptr; }
  explicit operator bool() const { return valid(); }

  // Offset of field `id` inside the table, 0 when absent.
  uint16_t field(int id) const {
    if (!b_) return 0;
    size_t o = 4 + 2 * (size_t)id;
    if (o + 2 > vtsize_) return 0;
    uint16_t f = b_->read<uint16_t>(vt_ + o);
    if (f != 0 && f >= tsize_) throw_load(std::string(b_->what) + ": field outside its table");
    return f;
  }
  bool has(int id) const { return field(id) != 0; }

  template <typename T>
  T scalar(int id, T def = T()) const {
    uint16_t f = field(id);
    return f ? b_->read<T>(pos_ + f) : def;
  }
  Table table(int id) const {
    uint16_t f = field(id);
    if (!f) return Table();
    return Table(b_, indirect(pos_ + f));
  }
  Vector vector(int id, size_t elem) const {
    uint16_t f = field(id);
    if (!f) return Vector();
    return Vector(b_, indirect(pos_ + f), elem);
  }
  std::string string(int id) const {
    uint16_t f = field(id);
    if (!f) return std::string();
    return read_string(b_, indirect(pos_ + f));
  }

  static size_t indirect_in(const Buffer* b, size_t at) {
    uint32_t rel = b->read<uint32_t>(at);
    size_t target = at + rel;
    if (target < at || target >= b->size) throw_load(std::string(b->what) + ": offset points past the end");
    return target;
  }
  static std::string read_string(const Buffer* b, size_t pos) {
    uint32_t n = b->read<uint32_t>(pos);
    b->check(pos + 4, (size_t)n + 1);
    return std::string((const char*)b->data + pos + 4, n);
  }

 private:
  size_t indirect(size_t at) const { return indirect_in(b_, at); }
  const Buffer* b_ = nullptr;
  size_t pos_ = 0, vt_ = 0;
  uint16_t vtsize_ = 0, tsize_ = 0;
};

inline Table Vector::table(uint32_t i) const {
  bounds(i);
  return Table(b_, Table::indirect_in(b_, pos_ + 4 + (size_t)i * 4));
}
inline std::string Vector::string(uint32_t i) const {
  bounds(i);
  return Table::read_string(b_, Table::indirect_in(b_, pos_ + 4 + (size_t)i * 4));
}

// The root table of a flatbuffer, after checking its 4-byte file identifier.
inline Table root(const Buffer* b, const char* ident, const char* alt_ident = nullptr) {
  b->check(0, 8);
  if (ident) {
    bool ok = std::memcmp(b->data + 4, ident, 4) == 0 || (alt_ident && std::memcmp(b->data + 4, alt_ident, 4) == 0);
    if (!ok)
      throw_load(std::string(b->what) + ": file identifier is '" + std::string((const char*)b->data + 4, 4) +
                 "', expected '" + ident + "'");
  }
  return Table(b, Table::indirect_in(b, 0));
}

}  // namespace etnp::fb
