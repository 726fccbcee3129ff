#ifndef _WIN32
#include "os/file_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "os/pages.h"

namespace etnp::os {

namespace {
FileIdentity identity_of(const struct stat& st) {
  FileIdentity id;
  id.device = (uint64_t)st.st_dev;
  id.inode = (uint64_t)st.st_ino;
  id.size = (uint64_t)st.st_size;
#if defined(__APPLE__)
  id.mtime_ns = (uint64_t)st.st_mtimespec.tv_sec * 1000000000ull + (uint64_t)st.st_mtimespec.tv_nsec;
#else
  id.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
#endif
  return id;
}

// Opens PATH read-only; it must be a regular file. Returns the descriptor, its size and identity.
int open_regular(const std::string& path, size_t* size, FileIdentity* id) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_load("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_load("'" + path + "' is not a regular file");
  }
  *size = (size_t)st.st_size;
  *id = identity_of(st);
  return fd;
}

// Reads up to N bytes at OFFSET (retrying short reads); the count read, stopping at the end of
// the file or an error (its errno in *err, else 0).
size_t pread_all(int fd, uint8_t* dst, size_t n, uint64_t offset, int* err) {
  size_t got = 0;
  *err = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, dst + got, n - got, (off_t)(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) *err = errno;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}
}  // namespace

FileBytes::~FileBytes() {
  if (data_) unmap_pages(data_, mapped_);
}

std::unique_ptr<FileBytes> read_file(const std::string& path) {
  std::unique_ptr<FileBytes> f(new FileBytes());
  size_t size = 0;
  int fd = open_regular(path, &size, &f->identity_);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > 0) {
    f->data_ = static_cast<uint8_t*>(map_pages(size));
    if (!f->data_) throw_load("cannot allocate " + std::to_string(size) + " bytes for '" + path + "'");
    f->mapped_ = size;
  }
  int err = 0;
  const size_t got = pread_all(fd, f->data_, size, 0, &err);
  uint8_t probe;
  const size_t more = err ? 0 : pread_all(fd, &probe, 1, size, &err);  // (one byte past the end: did it grow?)
  if (err) throw_load("cannot read '" + path + "': " + std::strerror(err));
  if (more > 0) throw_load("'" + path + "' grew while it was read (it changed: load it again once it is written)");
  f->size_ = got;  // (a file that shrank since fstat: what it holds now)
  return f;
}

bool read_file_range(const std::string& path, const FileIdentity& id, uint64_t offset, void* dst, size_t n) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  const bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && identity_of(st) == id;
  int err = 0;
  const bool ok = same && pread_all(fd, static_cast<uint8_t*>(dst), n, offset, &err) == n;
  ::close(fd);
  return ok;
}

std::unique_ptr<FileMapping> FileMapping::open(const std::string& path) {
  size_t size = 0;
  std::unique_ptr<FileMapping> m(new FileMapping());
  int fd = open_regular(path, &size, &m->identity_);
  if (size > 0) {
    void* a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (a == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw_load("cannot mmap '" + path + "': " + std::strerror(e));
    }
    m->addr_ = a;
    m->size_ = size;
  }
  ::close(fd);
  return m;
}

FileMapping::~FileMapping() {
  if (addr_) munmap(addr_, size_);
}

}  // namespace etnp::os
#endif  // !_WIN32
