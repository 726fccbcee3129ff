// POSIX side of os/weight_file.h: mmap(PROT_READ, MAP_SHARED), write(2) and rename(2).
#if !defined(_WIN32)
#include "os/weight_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>

namespace etnp::os {

std::shared_ptr<ReadOnlyMapping> ReadOnlyMapping::open(const std::string& path) noexcept {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  std::shared_ptr<ReadOnlyMapping> m;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* a = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (a != MAP_FAILED) {
      try {
        m.reset(new ReadOnlyMapping());
      } catch (...) {
        munmap(a, (size_t)st.st_size);
        ::close(fd);
        return nullptr;
      }
      m->addr_ = a;
      m->size_ = (size_t)st.st_size;
    }
  }
  ::close(fd);
  return m;
}

ReadOnlyMapping::~ReadOnlyMapping() {
  if (addr_) munmap(addr_, size_);
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

bool AtomicFileWriter::open() noexcept {
  static std::atomic<uint64_t> serial{0};
  try {
    const uint64_t t = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%llx.%llu", (long)getpid(), (unsigned long long)t,
                  (unsigned long long)serial++);
    tmp_ = path_ + suffix;
  } catch (...) {
    return !(failed_ = true);
  }
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) tmp_.clear(), failed_ = true;
  return !failed_;
}

bool AtomicFileWriter::write(const void* p, size_t n) noexcept {
  const char* c = static_cast<const char*>(p);
  while (!failed_ && n > 0) {
    ssize_t w = ::write((int)fd_, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) failed_ = true;
    else c += w, n -= (size_t)w;
  }
  return !failed_;
}

bool AtomicFileWriter::commit() noexcept {
  if (failed_ || fd_ < 0) return false;
  const bool closed = ::close((int)fd_) == 0;
  fd_ = -1;
  if (!closed || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
    discard();
    return false;
  }
  tmp_.clear();
  return true;
}

void AtomicFileWriter::discard() noexcept {
  failed_ = true;
  if (fd_ >= 0) ::close((int)fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

}  // namespace etnp::os
#endif  // !_WIN32
