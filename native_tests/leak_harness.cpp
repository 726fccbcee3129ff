// leak_harness MODEL N: load, run every method, destroy - N times. Built with ASan+LSan:
// any leak or memory error makes the process exit non-zero.
#include "harness_util.h"

int main(int argc, char** argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: leak_harness MODEL N\n"); return 2; }
  int n = std::atoi(argv[2]);
  for (int it = 0; it < n; it++) {
    etnp_runtime* rt = nullptr;
    etnp_program* prog = nullptr;
    if (etnp_runtime_create(2, &rt) || etnp_program_load_file(rt, argv[1], &prog)) {
      std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
      return 1;
    }
    for (size_t k = 0; k < etnp_program_num_methods(prog); k++) {
      etnp_method* m = nullptr;
      if (etnp_method_load(prog, etnp_program_method_name(prog, k), &m)) {
        std::fprintf(stderr, "method load failed: %s\n", etnp_last_error_message());
        return 1;
      }
      InputSet s;
      if (!make_inputs(m, s)) return 1;
      etnp_result* r = nullptr;
      if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) {
        std::fprintf(stderr, "run failed: %s\n", etnp_last_error_message());
        return 1;
      }
      etnp_result_destroy(r);
      // an error path too: wrong input count must fail cleanly and leak nothing
      if (etnp_method_run(m, nullptr, 0, &r) == ETNP_OK && s.inputs.size() > 0) return 1;
      etnp_method_destroy(m);
    }
    etnp_program_destroy(prog);
    etnp_runtime_destroy(rt);
  }
  std::printf("leak_harness: %d iters OK\n", n);
  return 0;
}
