// USDT probes (provider "etnp") for bpftrace, perf and SystemTap: systemtap's <sys/sdt.h>, each
// probe a nop instruction and an ELF note (.note.stapsdt) saying where its arguments are. Built
// on Linux where the compiler finds <sys/sdt.h> (Debian: systemtap-sdt-dev, a build-time header);
// elsewhere the probes are compiled out and their arguments never evaluated. Every probe
// has a semaphore, etnp_<name>_semaphore (os/probes.cpp), that the tracer raises while it is
// attached: the per-instruction and per-node probes test it first (ETNP_PROBE_ENABLED, a load and
// a branch), so untraced calls compute none of their arguments. The probes and their arguments
// are listed in README.md ("USDT probes").
#pragma once

// Every probe, X(name).
#define ETNP_PROBE_NAMES(X)                                                                   \
  X(program_load_begin) X(program_load_end) X(method_load_begin) X(method_load_end)          \
  X(method_execute_begin) X(method_execute_end) X(instruction_begin) X(instruction_end)       \
  X(xnn_node_begin) X(xnn_node_end) X(error)

#if defined(__linux__) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define ETNP_HAVE_USDT 1
#endif
#endif

#ifdef ETNP_HAVE_USDT
#if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)
#error "os/probes.h must come before any other include of <sys/sdt.h> (its probes need semaphores)"
#endif
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

// (hidden: the notes give the tracer their addresses; section .probes as SystemTap's dtrace
// writes them, which perf looks for)
#define ETNP_PROBE_SEMAPHORE_ATTRS __attribute__((visibility("hidden"), section(".probes")))
#define ETNP_DECLARE_PROBE_SEMAPHORE(name) extern "C" ETNP_PROBE_SEMAPHORE_ATTRS volatile unsigned short etnp_##name##_semaphore;
ETNP_PROBE_NAMES(ETNP_DECLARE_PROBE_SEMAPHORE)
#undef ETNP_DECLARE_PROBE_SEMAPHORE

#define ETNP_PROBE_ENABLED(name) __builtin_expect(etnp_##name##_semaphore != 0, 0)
#define ETNP_PROBE1(name, a) STAP_PROBE1(etnp, name, a)
#define ETNP_PROBE2(name, a, b) STAP_PROBE2(etnp, name, a, b)
#define ETNP_PROBE3(name, a, b, c) STAP_PROBE3(etnp, name, a, b, c)
#else
// (the arguments are compiled, never evaluated)
#define ETNP_PROBE_ENABLED(name) false
#define ETNP_PROBE1(name, a) do { if (false) (void)(a); } while (0)
#define ETNP_PROBE2(name, a, b) do { if (false) (void)(a), (void)(b); } while (0)
#define ETNP_PROBE3(name, a, b, c) do { if (false) (void)(a), (void)(b), (void)(c); } while (0)
#endif
