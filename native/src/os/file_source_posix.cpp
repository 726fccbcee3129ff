#ifndef _WIN32
#include "os/file_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

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

constexpr uint64_t kSettledNs = 2000000000ull;  // (read_file: a file older than this may be read in part)

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
  if (data_) munmap(data_, mapped_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {
// The file to read from: the one kept open, else (a file read whole) opened again by its path,
// closed with this object.
struct Reader {
  int fd = -1;
  bool own = false;
  Reader(int kept, const std::string& path) : fd(kept) {
    if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC), own = true;
  }
  ~Reader() {
    if (own && fd >= 0) ::close(fd);
  }
  bool is(const FileIdentity& id) const {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && identity_of(st) == id;
  }
};
}  // namespace

bool FileBytes::fill(size_t offset, size_t n) {
  const size_t page = page_size();
  if (offset >= size_ || n == 0) return true;
  const size_t b = offset / page * page, e = std::min(size_, (offset + std::min(n, size_ - offset) + page - 1) / page * page);
  const size_t span = (e - b + page - 1) / page * page;  // (the last page: past the file's end too)
  const Reader r(fd_, path_);
  if (!r.is(identity_) || mprotect(data_ + b, span, PROT_READ | PROT_WRITE) != 0) return false;
  populate_pages(data_ + b, span);  // (one call, not a fault a page)
  int err = 0;
  if (pread_all(r.fd, data_ + b, e - b, b, &err) == e - b && r.is(identity_)) return true;  // (not rewritten meanwhile)
  mprotect(data_ + b, span, PROT_NONE);  // (unread again: never half-read bytes that look read)
  return false;
}

bool FileBytes::copy_out(size_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) return false;
  const Reader r(fd_, path_);
  int err = 0;
  return r.is(identity_) && pread_all(r.fd, static_cast<uint8_t*>(dst), n, offset, &err) == n && r.is(identity_);
}

std::unique_ptr<FileBytes> read_file(const std::string& path, size_t head) {
  std::unique_ptr<FileBytes> f(new FileBytes());
  size_t size = 0;
  f->fd_ = open_regular(path, &size, &f->identity_);
  f->path_ = path;
  const size_t page = page_size();
  // (a file modified in the last seconds is read whole: a rewrite in place within the timestamps'
  // granularity - a clock tick - would keep its identity, and the bytes left unread would change
  // unnoticed)
  struct timespec now;
  const bool recent = clock_gettime(CLOCK_REALTIME, &now) != 0 ||
                      f->identity_.mtime_ns + kSettledNs > (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
  const bool whole = head >= size || recent;
  if (size > 0) {
    // (read whole: its pages populated in one call; in part: the rest inaccessible until filled)
    void* a = whole ? map_pages(size)
                    : mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == nullptr || a == MAP_FAILED) throw_load("cannot allocate " + std::to_string(size) + " bytes for '" + path + "'");
    f->data_ = static_cast<uint8_t*>(a);
    f->mapped_ = size;
  }
  if (!whole) {
    f->size_ = size;
    const size_t n = std::min(size, (head + page - 1) / page * page);
    if (!f->fill(0, n)) throw_load("cannot read '" + path + "'");
    f->filled_ = n;
    return f;
  }
  int err = 0;
  const size_t got = pread_all(f->fd_, f->data_, size, 0, &err);
  uint8_t probe;
  const size_t more = err ? 0 : pread_all(f->fd_, &probe, 1, size, &err);  // (one byte past the end: did it grow?)
  if (err) throw_load("cannot read '" + path + "': " + std::strerror(err));
  if (more > 0) throw_load("'" + path + "' grew while it was read (it changed: load it again once it is written)");
  f->size_ = f->filled_ = got;  // (a file that shrank since fstat: what it holds now)
  ::close(f->fd_);  // (nothing left unread: a later read - copy_out - opens it again by its path)
  f->fd_ = -1;
  return f;
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
