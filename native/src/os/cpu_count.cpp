#include "os/cpu_count.h"

#include <sstream>
#include <string>

namespace etnp::os {

int cpus_from_cpu_max(const std::string& line) {
  std::istringstream in(line);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  long long q = 0;
  try {
    q = std::stoll(quota);
  } catch (...) {
    return 0;
  }
  if (q <= 0) return 0;
  long long n = (q + period - 1) / period;
  return n > 4096 ? 4096 : (int)n;
}

}  // namespace etnp::os
