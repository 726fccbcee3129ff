#ifndef _WIN32
#include "os/cpu_count.h"

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

namespace etnp::os {

namespace {

int hardware_threads() {
  int n = (int)std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

#if defined(__linux__)
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The logical CPUs this process may run on (empty when sched_getaffinity fails).
std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  for (int ncpu = 1024; ncpu <= (1 << 16); ncpu *= 4) {
    cpu_set_t* set = CPU_ALLOC(ncpu);
    if (!set) break;
    size_t bytes = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      for (int c = 0; c < ncpu; c++)
        if (CPU_ISSET_S(c, bytes, set)) cpus.push_back(c);
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);  // EINVAL: the kernel's mask is larger, try a bigger one
  }
  return cpus;
}

// Distinct (package, core) pairs among CPUS; each CPU counts alone when sysfs says nothing.
int physical_cores_of(const std::vector<int>& cpus) {
  std::set<std::pair<std::string, std::string>> cores;
  for (int c : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::string pkg = read_line(dir + "physical_package_id"), core = read_line(dir + "core_id");
    if (core.empty()) core = "cpu" + std::to_string(c);
    cores.insert({pkg, core});
  }
  return (int)cores.size();
}

// The tightest CPU quota of this process's cgroup and its ancestors (0: none).
int cgroup_cpu_limit() {
  int best = 0;
  auto take = [&best](int n) {
    if (n > 0 && (best == 0 || n < best)) best = n;
  };
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("0::", 0) == 0) {  // cgroup v2: walk from this cgroup up to the root
      std::string path = line.substr(3);
      for (;;) {
        take(cpus_from_cpu_max(read_line("/sys/fs/cgroup" + path + (path == "/" ? "" : "/") + "cpu.max")));
        if (path.empty() || path == "/") break;
        size_t slash = path.rfind('/');
        path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
      }
    }
  }
  for (const char* dir : {"/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/cpu,cpuacct/"}) {  // cgroup v1
    std::string q = read_line(std::string(dir) + "cpu.cfs_quota_us");
    std::string p = read_line(std::string(dir) + "cpu.cfs_period_us");
    if (!q.empty() && !p.empty()) take(cpus_from_cpu_max(q + " " + p));
  }
  return best;
}
#endif

}  // namespace

int usable_cores() {
  int n = 0;
#if defined(__linux__)
  std::vector<int> cpus = affinity_cpus();
  n = cpus.empty() ? hardware_threads() : physical_cores_of(cpus);
  int quota = cgroup_cpu_limit();
  if (quota > 0 && quota < n) n = quota;
#elif defined(__APPLE__)
  int v = 0;
  size_t len = sizeof(v);
  if (sysctlbyname("hw.physicalcpu", &v, &len, nullptr, 0) == 0) n = v;
  if (n <= 0) n = hardware_threads();
#else
  n = hardware_threads();
#endif
  return n > 0 ? n : 1;
}

}  // namespace etnp::os
#endif  // !_WIN32
