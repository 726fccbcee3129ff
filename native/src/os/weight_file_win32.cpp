// Windows side of os/weight_file.h: a FILE_MAP_READ view, WriteFile and MoveFileExW
// (MOVEFILE_REPLACE_EXISTING). (Not built on the CI's Linux runners: kept to the calls
// file_source_win32.cpp already makes.)
#ifdef _WIN32
#include "os/weight_file.h"

#include <atomic>
#include <chrono>
#include <cstdio>

#include "os/win32_api.h"

namespace etnp::os {

namespace {
bool widen(const std::string& path, std::wstring* w) {
  if (path.empty()) return false;
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), (int)path.size(), nullptr, 0);
  if (n <= 0) return false;
  w->assign((size_t)n, L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), (int)path.size(), &(*w)[0], n);
  return true;
}
}  // namespace

std::shared_ptr<ReadOnlyMapping> ReadOnlyMapping::open(const std::string& path) noexcept {
  try {
    std::wstring w;
    if (!widen(path, &w)) return nullptr;
    HANDLE f = CreateFileW(w.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                           FILE_ATTRIBUTE_NORMAL, nullptr);
    if (f == INVALID_HANDLE_VALUE) return nullptr;
    LARGE_INTEGER sz;
    std::shared_ptr<ReadOnlyMapping> m;
    if (GetFileType(f) == FILE_TYPE_DISK && GetFileSizeEx(f, &sz) && sz.QuadPart > 0) {
      HANDLE map = CreateFileMappingW(f, nullptr, PAGE_READONLY, 0, 0, nullptr);
      if (map != nullptr) {
        void* a = MapViewOfFile(map, FILE_MAP_READ, 0, 0, (size_t)sz.QuadPart);
        CloseHandle(map);
        if (a != nullptr) {
          m.reset(new ReadOnlyMapping());
          m->addr_ = a;
          m->size_ = (size_t)sz.QuadPart;
        }
      }
    }
    CloseHandle(f);
    return m;
  } catch (...) {
    return nullptr;
  }
}

ReadOnlyMapping::~ReadOnlyMapping() {
  if (addr_) UnmapViewOfFile(addr_);
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

bool AtomicFileWriter::open() noexcept {
  static std::atomic<uint64_t> serial{0};
  try {
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp.%lu.%llx.%llu", (unsigned long)GetCurrentProcessId(),
                  (unsigned long long)std::chrono::steady_clock::now().time_since_epoch().count(),
                  (unsigned long long)serial++);
    tmp_ = path_ + suffix;
    std::wstring w;
    if (!widen(tmp_, &w)) return !(failed_ = true);
    HANDLE h = CreateFileW(w.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
      tmp_.clear();
      return !(failed_ = true);
    }
    fd_ = (intptr_t)h;
    return true;
  } catch (...) {
    tmp_.clear();
    return !(failed_ = true);
  }
}

bool AtomicFileWriter::write(const void* p, size_t n) noexcept {
  const char* c = static_cast<const char*>(p);
  while (!failed_ && n > 0) {
    DWORD w = 0, chunk = (DWORD)(n < (1u << 30) ? n : (1u << 30));
    if (!WriteFile((HANDLE)fd_, c, chunk, &w, nullptr) || w == 0) failed_ = true;
    else c += w, n -= w;
  }
  return !failed_;
}

bool AtomicFileWriter::commit() noexcept {
  if (failed_ || fd_ == -1) return false;
  CloseHandle((HANDLE)fd_);
  fd_ = -1;
  std::wstring from, to;
  bool ok = false;
  try {
    ok = widen(tmp_, &from) && widen(path_, &to) && MoveFileExW(from.c_str(), to.c_str(), MOVEFILE_REPLACE_EXISTING);
  } catch (...) {
  }
  if (!ok) {
    discard();
    return false;
  }
  tmp_.clear();
  return true;
}

void AtomicFileWriter::discard() noexcept {
  failed_ = true;
  if (fd_ != -1) CloseHandle((HANDLE)fd_);
  fd_ = -1;
  try {
    std::wstring w;
    if (!tmp_.empty() && widen(tmp_, &w)) DeleteFileW(w.c_str());
  } catch (...) {
  }
  tmp_.clear();
}

}  // namespace etnp::os
#endif  // _WIN32
