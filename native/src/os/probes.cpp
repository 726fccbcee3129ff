// The USDT probes' semaphores (os/probes.h): nothing where the probes are not built.
#include "os/probes.h"

#ifdef ETNP_HAVE_USDT
extern "C" {
#define ETNP_DEFINE_PROBE_SEMAPHORE(name) ETNP_PROBE_SEMAPHORE_ATTRS volatile unsigned short etnp_##name##_semaphore = 0;
ETNP_PROBE_NAMES(ETNP_DEFINE_PROBE_SEMAPHORE)
}
#endif
