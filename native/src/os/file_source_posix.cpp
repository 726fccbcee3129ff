#ifndef _WIN32
#include "os/file_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace etnp::os {

namespace {
// Opens PATH read-only; it must be a regular file. Returns the descriptor and its size.
int open_regular(const std::string& path, size_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_load("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_load("'" + path + "' is not a regular file");
  }
  *size = (size_t)st.st_size;
  return fd;
}
}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  size_t size = 0;
  int fd = open_regular(path, &size);
  std::vector<uint8_t> out;
  try {
    out.resize(size);
    size_t got = 0;
    uint8_t probe[1];
    for (;;) {  // until end of file: the file may have grown or shrunk since fstat
      // (the size fstat gave is read into place and one more byte probes for the end, so a file
      // of that size is read without growing - and so copying - the buffer)
      const bool full = got == out.size();
      ssize_t n = full ? ::read(fd, probe, 1) : ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_load("cannot read '" + path + "': " + std::strerror(errno));
      if (n == 0) break;
      if (full) {  // it grew since fstat: read on
        out.resize(got + 65536);
        out[got] = probe[0];
      }
      got += (size_t)n;
    }
    out.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return out;
}

std::unique_ptr<FileMapping> FileMapping::open(const std::string& path) {
  size_t size = 0;
  int fd = open_regular(path, &size);
  std::unique_ptr<FileMapping> m(new FileMapping());
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
