// libFuzzer target for the .pte loader, the XNNPACK blob reader and the interpreter
// (clang++ -fsanitize=fuzzer,address,undefined). Every input is loaded from bytes (harness_util.h
// load_any: a .ptd as the external weights of tests/models/mlp_external.pte, a .bpte through the
// program it bundles, anything else as a .pte); when it loads, each method is loaded and run on
// patterned inputs of its planned shapes (token ids in range for LLM programs).
//   fuzz_libfuzzer CORPUS_DIR SEED_DIR... -max_total_time=N
// ETNP_FUZZ_LOAD_ONLY=1 stops after method load (program, memory plan, kernels, XNNPACK graph
// and weight packing): many times more executions per second on the readers, without the
// inputs whose declared work (a huge convolution, say) is legal but slow to run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness_util.h"

static bool load_only() {
  static const bool v = [] {
    const char* e = std::getenv("ETNP_FUZZ_LOAD_ONLY");
    return e && *e && *e != '0';
  }();
  return v;
}

static etnp_runtime* runtime() {
  static etnp_runtime* rt = [] {
    etnp_runtime* r = nullptr;
    etnp_runtime_create(1, &r);
    return r;
  }();
  return rt;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  etnp_program* prog = nullptr;
  if (load_any(runtime(), data, size, &prog) != ETNP_OK) return 0;
  const int64_t ids = load_only() ? 1 : token_id_range(prog);
  for (size_t k = 0; k < etnp_program_num_methods(prog); k++) {
    const char* name = etnp_program_method_name(prog, k);
    for (int side = 0; side < 2; side++) {  // the signature reader, on plans that may not load
      size_t n = 0;
      etnp_value_meta meta;
      if (etnp_program_method_num_io(prog, name, side, &n) == ETNP_OK)
        for (size_t i = 0; i < n; i++) etnp_program_method_io_meta(prog, name, side, i, &meta);
    }
    etnp_method* m = nullptr;
    if (etnp_method_load(prog, etnp_program_method_name(prog, k), &m) != ETNP_OK) continue;
    InputSet s;
    if (!load_only() && make_inputs(m, s, 1 << 22, ids)) {
      etnp_result* r = nullptr;
      if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r) == ETNP_OK) {
        etnp_result_destroy(r);
        // state back to its initial values, and a second call on it
        if (etnp_method_reset(m) == ETNP_OK && etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r) == ETNP_OK)
          etnp_result_destroy(r);
      }
    }
    etnp_method_destroy(m);
  }
  etnp_program_destroy(prog);
  return 0;
}
