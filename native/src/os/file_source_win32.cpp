#ifdef _WIN32
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "os/file_source.h"
#include "os/pages.h"

#include "os/win32_api.h"

namespace etnp::os {

namespace {
std::string last_error_text() {
  DWORD e = GetLastError();
  char buf[256] = {0};
  DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, e, 0, buf,
                           sizeof(buf), nullptr);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == '.')) buf[--n] = 0;
  return n ? std::string(buf) : "error " + std::to_string((unsigned long)e);
}

// PATH is UTF-8 (what Python passes); Windows wants UTF-16.
std::wstring widen(const std::string& path) {
  if (path.empty()) return std::wstring();
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), (int)path.size(), nullptr, 0);
  if (n <= 0) throw_load("'" + path + "' is not a valid UTF-8 path");
  std::wstring w((size_t)n, L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), (int)path.size(), &w[0], n);
  return w;
}

struct Handle {
  HANDLE h = INVALID_HANDLE_VALUE;
  ~Handle() {
    if (h != INVALID_HANDLE_VALUE && h != nullptr) CloseHandle(h);
  }
};

// Opens PATH for reading; it must be a regular file (not a directory or device). Returns its size.
void open_regular(const std::string& path, Handle* f, size_t* size) {
  f->h = CreateFileW(widen(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (f->h == INVALID_HANDLE_VALUE) throw_load("cannot open '" + path + "': " + last_error_text());
  LARGE_INTEGER sz;
  if (GetFileType(f->h) != FILE_TYPE_DISK || !GetFileSizeEx(f->h, &sz))
    throw_load("'" + path + "' is not a regular file");
  *size = (size_t)sz.QuadPart;
}
}  // namespace

FileBytes::~FileBytes() {
  if (data_) unmap_pages(data_, mapped_);
}

std::unique_ptr<FileBytes> read_file(const std::string& path, size_t) {  // (read whole)
  Handle f;
  size_t size = 0;
  open_regular(path, &f, &size);
  std::unique_ptr<FileBytes> out(new FileBytes());
  if (size > 0) {
    out->data_ = static_cast<uint8_t*>(map_pages(size));
    if (!out->data_) throw_load("cannot allocate " + std::to_string(size) + " bytes for '" + path + "'");
    out->mapped_ = size;
  }
  size_t got = 0;
  for (;;) {  // the size read first; then one byte probes for the end (a file that grew is refused)
    const bool full = got == size;
    uint8_t probe[1];
    DWORD want = full ? 1 : (DWORD)std::min<size_t>(size - got, 1u << 30), n = 0;
    if (!ReadFile(f.h, full ? probe : out->data_ + got, want, &n, nullptr))
      throw_load("cannot read '" + path + "': " + last_error_text());
    if (n == 0) break;
    if (full) throw_load("'" + path + "' grew while it was read (it changed: load it again once it is written)");
    got += n;
  }
  out->size_ = out->filled_ = got;
  return out;  // (identity unset: Windows gives no pages back, so nothing is read again)
}

// (nothing is left unread nor given back on Windows: never needed)
bool FileBytes::fill(size_t, size_t) { return true; }  // (every byte was read when opened)
bool FileBytes::copy_out(size_t, void*, size_t) const { return false; }

std::unique_ptr<FileMapping> FileMapping::open(const std::string& path) {
  Handle f;
  size_t size = 0;
  open_regular(path, &f, &size);
  std::unique_ptr<FileMapping> m(new FileMapping());
  if (size > 0) {
    // copy-on-write view, like POSIX MAP_PRIVATE with PROT_READ | PROT_WRITE
    Handle map;
    map.h = CreateFileMappingW(f.h, nullptr, PAGE_WRITECOPY, 0, 0, nullptr);
    if (map.h == nullptr) throw_load("cannot map '" + path + "': " + last_error_text());
    void* a = MapViewOfFile(map.h, FILE_MAP_COPY, 0, 0, size);
    if (a == nullptr) throw_load("cannot map '" + path + "': " + last_error_text());
    m->addr_ = a;
    m->size_ = size;
  }
  return m;
}

FileMapping::~FileMapping() {
  if (addr_) UnmapViewOfFile(addr_);
}

}  // namespace etnp::os
#endif  // _WIN32
