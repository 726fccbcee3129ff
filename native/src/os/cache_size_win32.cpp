#ifdef _WIN32
#include "os/cache_size.h"

#include <vector>

#include "os/win32_api.h"

namespace etnp::os {

namespace {
int64_t query() {
  DWORD len = 0;
  GetLogicalProcessorInformation(nullptr, &len);
  if (len == 0) return 0;
  std::vector<SYSTEM_LOGICAL_PROCESSOR_INFORMATION> info(len / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION) + 1);
  if (!GetLogicalProcessorInformation(info.data(), &len)) return 0;
  int64_t best = 0, level = 0;
  for (size_t i = 0; i < len / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION); i++) {
    if (info[i].Relationship != RelationCache) continue;
    const CACHE_DESCRIPTOR& c = info[i].Cache;
    if (c.Type != CacheUnified && c.Type != CacheData) continue;
    if (c.Level > level || (c.Level == level && (int64_t)c.Size > best)) level = c.Level, best = (int64_t)c.Size;
  }
  return best;
}
}  // namespace

int64_t query_last_level_cache_bytes() { return query(); }

}  // namespace etnp::os
#endif
