/* cpuid_mask.so: makes a process see an x86-64 CPU without AVX-512 (ETNP_MASK_ISA=avx2) or without
 * AVX at all (ETNP_MASK_ISA=sse), so that the reference runtime (upstream ExecuTorch + XNNPACK,
 * which picks its kernels by CPUID and has no switch like our ETNP_CPU) runs the kernels it runs on
 * such a machine - on this machine's cores, beside ours: issue #33's "the reference's numbers from
 * an AVX2-only machine" without one. A measuring tool, never part of the package.
 *
 *   cc -O2 -shared -fPIC tools/cpuid_mask.c -o /tmp/cpuid_mask.so
 *   ETNP_MASK_ISA=avx2 LD_PRELOAD=/tmp/cpuid_mask.so python ...
 *
 * Linux x86-64 on a CPU with CPUID faulting (/proc/cpuinfo: cpuid_fault): the constructor turns
 * faulting on (arch_prctl ARCH_SET_CPUID, inherited by every thread the process makes), and the
 * SIGSEGV handler runs each CPUID itself, clearing the hidden features' bits. Only CPUID is
 * faked: the dynamic loader's own choices (glibc's memcpy) were made before the constructor ran,
 * and the instructions still execute if code uses them without asking - which is why XNNPACK's and
 * our own detection (both read CPUID) are what it steers. Exits 97 where faulting is unavailable. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_SET_CPUID
#define ARCH_SET_CPUID 0x1012
#endif

static int hide_avx; /* sse: AVX, AVX2, FMA, F16C too */

static long cpuid_faulting(int on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void on_segv(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  const uint8_t* ip = (const uint8_t*)uc->uc_mcontext.gregs[REG_RIP];
  (void)si;
  if (!(ip[0] == 0x0f && ip[1] == 0xa2)) { /* a real fault: die of it */
    signal(sig, SIG_DFL);
    return;
  }
  const uint32_t leaf = (uint32_t)uc->uc_mcontext.gregs[REG_RAX], sub = (uint32_t)uc->uc_mcontext.gregs[REG_RCX];
  uint32_t a, b, c, d;
  cpuid_faulting(0);
  __cpuid_count(leaf, sub, a, b, c, d);
  cpuid_faulting(1);
  if (leaf == 1 && hide_avx) c &= ~((1u << 12) | (1u << 28) | (1u << 29)); /* FMA, AVX, F16C */
  if (leaf == 7 && sub == 0) {
    /* AVX512 F, DQ, IFMA, PF, ER, CD, BW, VL; VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ; 4VNNIW, 4FMAPS,
       VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8 */
    b &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
    c &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    d &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
    if (hide_avx) b &= ~((1u << 5) | (1u << 3) | (1u << 8)); /* AVX2, BMI1, BMI2 */
  }
  if (leaf == 7 && sub == 1) a &= ~((1u << 4) | (1u << 5)); /* AVX-VNNI, AVX512-BF16 */
  uc->uc_mcontext.gregs[REG_RAX] = a;
  uc->uc_mcontext.gregs[REG_RBX] = b;
  uc->uc_mcontext.gregs[REG_RCX] = c;
  uc->uc_mcontext.gregs[REG_RDX] = d;
  uc->uc_mcontext.gregs[REG_RIP] += 2;
}

__attribute__((constructor)) static void cpuid_mask_init(void) {
  const char* isa = getenv("ETNP_MASK_ISA");
  if (!isa || !*isa) isa = "avx2";
  if (strcmp(isa, "avx2") != 0 && strcmp(isa, "sse") != 0) {
    fprintf(stderr, "cpuid_mask: ETNP_MASK_ISA must be avx2 or sse, not %s\n", isa);
    _exit(97);
  }
  hide_avx = strcmp(isa, "sse") == 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  if (cpuid_faulting(1) != 0) {
    fprintf(stderr, "cpuid_mask: this CPU or kernel has no CPUID faulting\n");
    _exit(97);
  }
}
