/* A QEMU TCG plugin (API version 1, QEMU 7.2) that counts the guest instructions a program executes
 * and prints "insns: N" to stderr at exit: an inline add of each translated block's instruction
 * count, every time the block runs. Used by tools/count_aarch64_insns.sh to compare kernel paths
 * by instructions under qemu-aarch64 (qemu's timings say nothing of a real core). The few API
 * entry points are declared here (Debian ships no qemu-plugin.h); build:
 *   gcc -shared -fPIC -O2 tools/qemu/insn_count_plugin.c -o build/insn_count_plugin.so */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum { kInlineAddU64 = 0 }; /* QEMU_PLUGIN_INLINE_ADD_U64 */

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb*));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, int op, void* ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, void*), void* userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t count; /* (one vCPU counts: the harness runs on one thread) */

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, kInlineAddU64, &count, qemu_plugin_tb_n_insns(tb));
}

static void on_exit_(qemu_plugin_id_t id, void* p) {
  (void)id, (void)p;
  fprintf(stderr, "insns: %llu\n", (unsigned long long)count);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const void* info, int argc,
                                                               char** argv) {
  (void)info, (void)argc, (void)argv;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
  return 0;
}
