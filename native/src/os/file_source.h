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

// A regular file's bytes in pages of their own (so parts can be given back: release_pages), read
// at once or in parts. read_file reads the first HEAD bytes (whole pages; all of them where the
// file is no longer, was modified in the last 2 seconds, or where the OS reads files whole:
// Windows) and leaves the rest unread, its pages inaccessible (a read of them faults instead of
// seeing zeros) until fill reads them in; copy_out reads bytes elsewhere without making them
// resident. Both read only while the file is unchanged (same identity: rewriting it in place shows
// as a new size or modification time); a file read in part is kept open meanwhile (renamed over or
// deleted, it is still read as it was), one read whole is opened again by its path (renamed over
// or deleted, it cannot be read again).
class FileBytes {
 public:
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // bytes [0, filled()) were read when opened; the rest only as fill reads them
  size_t filled() const { return filled_; }
  const FileIdentity& identity() const { return identity_; }
  // Reads the whole pages holding [offset, offset + n) (clamped to the file) into place; false
  // where the file changed or cannot be read (nothing made readable then).
  bool fill(size_t offset, size_t n);
  // Reads [offset, offset + n) of the file into DST; false where the file changed or cannot be read.
  bool copy_out(size_t offset, void* dst, size_t n) const;

 private:
  friend std::unique_ptr<FileBytes> read_file(const std::string& path, size_t head);
  FileBytes() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0, filled_ = 0;
  FileIdentity identity_;
  std::string path_;
  int fd_ = -1;  // (POSIX: the file, kept open while bytes are left unread)
};

// The regular file at PATH, its first HEAD bytes read (ProgramLoadError when it cannot be opened
// or read, or when it changes size while it is read).
std::unique_ptr<FileBytes> read_file(const std::string& path, size_t head = SIZE_MAX);

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
