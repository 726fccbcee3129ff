// Permission for this process to use Intel AMX tile data (the 8 KiB of tile registers that an
// OS saves only for the processes that ask). Linux (5.16 and later) wants the request
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) before the first tile instruction, or the
// instruction faults; other systems: not requested here, so AMX counts as unavailable there.
#pragma once

namespace etnp::os {

// Asks once (the answer is kept); true when the process may use the tiles. It may fail where a
// thread's alternate signal stack is too small for the larger signal frame (the kernel then
// refuses), where the kernel is older, or off Linux / x86-64.
bool request_amx_tiles();

}  // namespace etnp::os
