#include "os/amx_permission.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace etnp::os {

namespace {
bool ask() {
#if defined(__linux__) && defined(__x86_64__)
  // (constants of the Linux ABI: arch/x86/include/uapi/asm/prctl.h, and the XSAVE feature
  // number of XTILEDATA)
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long long perm = 0;  // (granted: the feature's bit is in the permitted set)
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &perm) != 0) return false;
  return (perm >> kXfeatureXtiledata) & 1;
#else
  return false;
#endif
}
}  // namespace

bool request_amx_tiles() {
  static const bool granted = ask();
  return granted;
}

}  // namespace etnp::os
