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

// The whole regular file at PATH (ProgramLoadError when it cannot be opened or read).
std::vector<uint8_t> read_file(const std::string& path);

// A private, copy-on-write mapping of the regular file at PATH.
class FileMapping {
 public:
  static std::unique_ptr<FileMapping> open(const std::string& path);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }

 private:
  FileMapping() = default;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace etnp::os
