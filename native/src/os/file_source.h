// How a program file's bytes reach memory: read into a private copy (the default), or mapped
// (an explicit opt-in). A mapping shares the file's pages: truncating the file while it is
// mapped makes the next access fault (SIGBUS) and rewriting it in place can change what the
// program reads, so only read_file gives a program that no later change to the file affects.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etnp::os {

// What identifies a file's contents without reading them: device, inode (file index), size and
// modification time. Two equal identities mean the file was not replaced or rewritten between.
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0, mtime_ns = 0;
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
};

// A regular file's bytes in pages of their own (so parts can be given back: release_pages).
class FileBytes {
 public:
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const FileIdentity& identity() const { return identity_; }

 private:
  friend std::unique_ptr<FileBytes> read_file(const std::string& path);
  FileBytes() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
  FileIdentity identity_;
};

// The whole regular file at PATH (ProgramLoadError when it cannot be opened or read, or when it
// changes size while it is read).
std::unique_ptr<FileBytes> read_file(const std::string& path);

// Reads N bytes at OFFSET of the file at PATH into DST if the file still has identity ID;
// false (nothing or part read) otherwise.
bool read_file_range(const std::string& path, const FileIdentity& id, uint64_t offset, void* dst, size_t n);

// A private, copy-on-write mapping of the regular file at PATH.
class FileMapping {
 public:
  static std::unique_ptr<FileMapping> open(const std::string& path);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  const FileIdentity& identity() const { return identity_; }

 private:
  FileMapping() = default;
  FileIdentity identity_;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace etnp::os
