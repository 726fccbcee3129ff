// leak_harness MODEL N: load, run every method, destroy - N times. Built with ASan+LSan:
// any leak or memory error makes the process exit non-zero. Every run's outputs must be
// byte-identical to the first load's (same patterned inputs; token ids in range for LLM
// programs): under valgrind memcheck this comparison also reports outputs computed from
// uninitialised memory. Methods with state run again, are reset, and must repeat their outputs.
#include <vector>

#include "harness_util.h"

// FNV-1a over every output's bytes.
static uint64_t output_hash(const etnp_result* r) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < etnp_result_num_outputs(r); i++) {
    etnp_value_meta meta;
    if (etnp_result_output_meta(r, i, &meta)) continue;
    std::vector<unsigned char> buf(meta.nbytes);
    if (meta.nbytes && etnp_result_copy_output(r, i, buf.data(), buf.size())) continue;
    for (unsigned char c : buf) h = (h ^ c) * 1099511628211ull;
    h = (h ^ (uint64_t)meta.int_value) * 1099511628211ull;
  }
  return h;
}

// A method may outlive its program and runtime handles: every destruction order of the three
// handles must be safe (ASan reports a use of the freed runtime mutex otherwise).
static bool destroy_in_every_order(const char* path) {
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (auto& order : orders) {
    etnp_runtime* rt = nullptr;
    etnp_program* prog = nullptr;
    etnp_method* m = nullptr;
    if (etnp_runtime_create(1, &rt) || etnp_program_load_file(rt, path, &prog) ||
        etnp_method_load(prog, etnp_program_method_name(prog, 0), &m)) {
      std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
      return false;
    }
    for (int k : order) {
      if (k == 0) etnp_runtime_destroy(rt);
      if (k == 1) etnp_program_destroy(prog);
      if (k == 2) etnp_method_destroy(m);
    }
  }
  return true;
}

int main(int argc, char** argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: leak_harness MODEL N\n"); return 2; }
  int n = std::atoi(argv[2]);
  std::vector<uint64_t> first;  // per method, from the first iteration
  for (int it = 0; it < n; it++) {
    etnp_runtime* rt = nullptr;
    etnp_program* prog = nullptr;
    // odd iterations map the file (os::FileMapping) instead of reading it; outputs must not differ
    if (etnp_runtime_create(2, &rt) || etnp_program_load_file_ex(rt, argv[1], (it & 1) ? ETNP_LOAD_MMAP : 0, &prog)) {
      std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
      return 1;
    }
    const int64_t ids = token_id_range(prog);  // LLM programs: token ids below the vocabulary size
    for (size_t k = 0; k < etnp_program_num_methods(prog); k++) {
      etnp_method* m = nullptr;
      if (etnp_method_load(prog, etnp_program_method_name(prog, k), &m)) {
        std::fprintf(stderr, "method load failed: %s\n", etnp_last_error_message());
        return 1;
      }
      InputSet s;
      if (!make_inputs(m, s, (size_t)1 << 26, ids)) return 1;
      // every other iteration profiled: same outputs, events readable, nothing leaked
      if (it % 2 == 1 && etnp_method_set_profiling(m, 1)) return 1;
      etnp_result* r = nullptr;
      if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) {
        std::fprintf(stderr, "run failed: %s\n", etnp_last_error_message());
        return 1;
      }
      size_t chars = 0;
      for (size_t e = 0; e < etnp_method_num_profile_events(m); e++) {
        etnp_profile_event ev;
        if (etnp_method_profile_event(m, e, &ev) || ev.duration_ns < 0) return 1;
        chars += std::strlen(ev.name) + std::strlen(ev.shape);
      }
      if (it % 2 == 1 && etnp_method_num_profile_events(m) > 0 && chars == 0) return 1;
      const char* spec = nullptr;
      const void* bytes = nullptr;
      size_t nbytes = 0;
      if (etnp_program_method_container_meta(prog, etnp_program_method_name(prog, k), 0, &spec) ||
          etnp_program_data(prog, &bytes, &nbytes) || !spec || nbytes == 0)
        return 1;
      uint64_t h = output_hash(r);
      if (it == 0) first.push_back(h);
      else if (k >= first.size() || first[k] != h) {
        std::fprintf(stderr, "method %zu: outputs differ from the first load's\n", k);
        return 1;
      }
      etnp_result_destroy(r);
      // a method with state (KV caches): a second call on the evolved state, then reset - the
      // call after it must give the first call's outputs again
      if (etnp_method_num_state(m) > 0) {
        if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) {
          std::fprintf(stderr, "second run failed: %s\n", etnp_last_error_message());
          return 1;
        }
        etnp_result_destroy(r);
        if (etnp_method_reset(m) || etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) {
          std::fprintf(stderr, "reset/run failed: %s\n", etnp_last_error_message());
          return 1;
        }
        if (output_hash(r) != h) {
          std::fprintf(stderr, "method %zu: outputs after reset differ from the first call's\n", k);
          return 1;
        }
        etnp_result_destroy(r);
      }
      // an error path too: wrong input count must fail cleanly and leak nothing
      // (a method without inputs - an LLM's get_max_seq_len - succeeds: its result is freed)
      if (etnp_method_run(m, nullptr, 0, &r) == ETNP_OK) {
        if (s.inputs.size() > 0) return 1;
        etnp_result_destroy(r);
      }
      etnp_method_destroy(m);
    }
    etnp_program_destroy(prog);
    etnp_runtime_destroy(rt);
    if (!destroy_in_every_order(argv[1])) return 1;
  }
  std::printf("leak_harness: %d iters OK\n", n);
  return 0;
}
