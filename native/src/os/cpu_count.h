// How many threads the runtime should use by default: the physical cores this process may run
// on, capped by its CPU quota. POSIX (Linux, macOS) in cpu_count_posix.cpp, Windows in
// cpu_count_win32.cpp.
#pragma once
#include <string>

namespace etnp::os {

// Physical cores among the CPUs in this process's affinity mask (`taskset -c 0` gives 1; SMT
// siblings count once), capped by the cgroup CPU quota rounded up (cgroup v2 cpu.max of this
// process's cgroup and its ancestors, or cgroup v1 cpu.cfs_quota_us), at least 1.
int usable_cores();

// The cgroup v2 cpu.max line "QUOTA PERIOD" (or "max PERIOD") as whole CPUs rounded up;
// 0 when it sets no limit or cannot be parsed. (Exposed for the native checks.)
int cpus_from_cpu_max(const std::string& line);

}  // namespace etnp::os
