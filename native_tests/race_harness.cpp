// race_harness MODEL THREADS ITERS: (1) THREADS threads share one runtime and one method;
// (2) each thread owns its runtime; (3) methods outliving their program and runtime handles. Every result must equal the single-threaded one.
// Built with TSan: a data race makes the process exit non-zero.
#include <thread>

#include "harness_util.h"

static std::vector<unsigned char> run_once(etnp_method* m, InputSet& s, bool* ok) {
  etnp_result* r = nullptr;
  std::vector<unsigned char> out;
  if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) { *ok = false; return out; }
  etnp_value_meta meta;
  for (size_t i = 0; i < etnp_result_num_outputs(r); i++) {
    etnp_result_output_meta(r, i, &meta);
    size_t at = out.size();
    out.resize(at + meta.nbytes);
    if (meta.nbytes) etnp_result_copy_output(r, i, out.data() + at, meta.nbytes);
  }
  etnp_result_destroy(r);
  return out;
}

static etnp_method* open_method(etnp_runtime* rt, const char* path, etnp_program** prog) {
  etnp_method* m = nullptr;
  if (etnp_program_load_file(rt, path, prog) || etnp_method_load(*prog, etnp_program_method_name(*prog, 0), &m)) {
    std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
    std::exit(1);
  }
  return m;
}

int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: race_harness MODEL THREADS ITERS\n"); return 2; }
  int threads = std::atoi(argv[2]), iters = std::atoi(argv[3]);
  etnp_runtime* rt = nullptr;
  etnp_program* prog = nullptr;
  etnp_runtime_create(2, &rt);
  etnp_method* m = open_method(rt, argv[1], &prog);
  InputSet s;
  make_inputs(m, s);
  bool ok = true;
  std::vector<unsigned char> expect = run_once(m, s, &ok);
  std::vector<std::thread> ts;
  std::vector<int> bad(threads, 0);
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      for (int i = 0; i < iters; i++) {
        bool k = true;
        if (run_once(m, s, &k) != expect || !k) bad[t]++;
      }
    });
  for (auto& t : ts) t.join();
  ts.clear();
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      etnp_runtime* own = nullptr;
      etnp_program* p = nullptr;
      etnp_runtime_create(2, &own);
      etnp_method* mm = open_method(own, argv[1], &p);
      for (int i = 0; i < iters; i++) {
        bool k = true;
        if (run_once(mm, s, &k) != expect || !k) bad[t]++;
      }
      etnp_method_destroy(mm);
      etnp_program_destroy(p);
      etnp_runtime_destroy(own);
    });
  for (auto& t : ts) t.join();
  ts.clear();
  // (3) methods of one program run and are destroyed on several threads after the program and
  // runtime handles were destroyed: the methods own them, the last one frees them.
  {
    etnp_runtime* own = nullptr;
    etnp_program* p = nullptr;
    etnp_runtime_create(2, &own);
    etnp_method* keep = open_method(own, argv[1], &p);
    std::vector<etnp_method*> batch((size_t)threads, nullptr);
    for (int t = 0; t < threads; t++)
      if (etnp_method_load(p, etnp_program_method_name(p, 0), &batch[t])) {
        std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
        return 1;
      }
    etnp_program_destroy(p);
    etnp_runtime_destroy(own);
    for (int t = 0; t < threads; t++)
      ts.emplace_back([&, t] {
        bool k = true;
        if (run_once(batch[t], s, &k) != expect || !k) bad[t]++;
        etnp_method_destroy(batch[t]);
      });
    bool k = true;
    if (run_once(keep, s, &k) != expect || !k) bad[0]++;
    for (auto& t : ts) t.join();
    ts.clear();
    etnp_method_destroy(keep);
  }
  int total = 0;
  for (int b : bad) total += b;
  etnp_method_destroy(m);
  etnp_program_destroy(prog);
  etnp_runtime_destroy(rt);
  if (!ok || total) { std::fprintf(stderr, "race_harness: %d mismatching results\n", total); return 1; }
  std::printf("race_harness: %d threads x %d iters, shared and per-thread runtimes OK\n", threads, iters);
  return 0;
}
