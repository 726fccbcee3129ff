#ifdef _WIN32
#include "os/cpu_count.h"

#include <string>
#include <thread>
#include <vector>

#include "os/win32_api.h"

namespace etnp::os {

namespace {
int popcount(ULONG_PTR m) {
  int n = 0;
  for (; m; m &= m - 1) n++;
  return n;
}
}  // namespace

// Physical cores whose logical processors intersect the process affinity mask (processor group
// 0 only, as the process's default group; a machine with more groups counts its active
// processors instead), capped by the job object's CPU rate limit when one is set.
int usable_cores() {
  int n = 0;
  DWORD_PTR proc_mask = 0, sys_mask = 0;
  const bool have_mask = GetProcessAffinityMask(GetCurrentProcess(), &proc_mask, &sys_mask) && proc_mask;
  DWORD len = 0;
  GetLogicalProcessorInformation(nullptr, &len);
  if (len > 0 && have_mask) {
    std::vector<SYSTEM_LOGICAL_PROCESSOR_INFORMATION> info(len / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION) + 1);
    if (GetLogicalProcessorInformation(info.data(), &len)) {
      for (size_t i = 0; i < len / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION); i++)
        if (info[i].Relationship == RelationProcessorCore && (info[i].ProcessorMask & proc_mask)) n++;
    }
  }
  if (n <= 0 && have_mask) n = popcount(proc_mask);
  if (n <= 0) n = (int)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
  if (n <= 0) n = (int)std::thread::hardware_concurrency();
  JOBOBJECT_CPU_RATE_CONTROL_INFORMATION rate{};
  if (QueryInformationJobObject(nullptr, JobObjectCpuRateControlInformation, &rate, sizeof(rate), nullptr) &&
      (rate.ControlFlags & JOB_OBJECT_CPU_RATE_CONTROL_ENABLE) &&
      (rate.ControlFlags & JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP) && rate.CpuRate > 0) {
    // CpuRate: hundredths of a percent of all the machine's processors
    int all = (int)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    int cap = (int)(((long long)rate.CpuRate * all + 9999) / 10000);
    if (cap > 0 && cap < n) n = cap;
  }
  return n > 0 ? n : 1;
}

}  // namespace etnp::os
#endif  // _WIN32
