// bench_harness MODEL N [THREADS [OUT]]: loads MODEL, runs its "forward" method (else its first)
// once to warm up, then N times on the patterned inputs of harness_util.h, and prints the median
// and the fastest call in milliseconds. With OUT, the last call's outputs go to that file, each as
// (int32 dtype, int64 byte count, bytes) - the ETNP_DTYPE_* codes - so that the outputs of two
// builds of the core (Linux and Windows under Wine: tools/bench_wine.sh) can be compared.
// THREADS defaults to 1 (the quietest timing on a shared machine). Exit 1 on any failure.
#include <algorithm>
#include <chrono>
#include <vector>

#include "harness_util.h"

static bool write_outputs(const etnp_result* r, const char* path) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  bool ok = true;
  for (size_t i = 0; ok && i < etnp_result_num_outputs(r); i++) {
    etnp_value_meta meta;
    if (etnp_result_output_meta(r, i, &meta) != ETNP_OK || meta.kind != ETNP_KIND_TENSOR) continue;
    std::vector<unsigned char> buf(meta.nbytes);
    const int32_t dtype = meta.dtype;
    const int64_t nbytes = (int64_t)meta.nbytes;
    ok = (meta.nbytes == 0 || etnp_result_copy_output(r, i, buf.data(), buf.size()) == ETNP_OK) &&
         std::fwrite(&dtype, 4, 1, f) == 1 && std::fwrite(&nbytes, 8, 1, f) == 1 &&
         (buf.empty() || std::fwrite(buf.data(), 1, buf.size(), f) == buf.size());
  }
  return std::fclose(f) == 0 && ok;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_harness MODEL N [THREADS [OUT]]\n");
    return 2;
  }
  const int n = std::max(1, std::atoi(argv[2]));
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  etnp_runtime* rt = nullptr;
  etnp_program* prog = nullptr;
  etnp_method* m = nullptr;
  if (etnp_runtime_create(threads, &rt) || etnp_program_load_file(rt, argv[1], &prog)) {
    std::fprintf(stderr, "load failed: %s\n", etnp_last_error_message());
    return 1;
  }
  const char* method = etnp_program_method_name(prog, 0);
  for (size_t k = 0; k < etnp_program_num_methods(prog); k++)
    if (std::strcmp(etnp_program_method_name(prog, k), "forward") == 0) method = "forward";
  InputSet s;
  if (etnp_method_load(prog, method, &m) || !make_inputs(m, s, (size_t)1 << 28, token_id_range(prog))) {
    std::fprintf(stderr, "method load failed: %s\n", etnp_last_error_message());
    return 1;
  }
  std::vector<double> ms;
  etnp_result* r = nullptr;
  for (int it = 0; it <= n; it++) {
    if (r) etnp_result_destroy(r);
    r = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) {
      std::fprintf(stderr, "run failed: %s\n", etnp_last_error_message());
      return 1;
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (it > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());  // (call 0: warm-up)
  }
  if (argc > 4 && !write_outputs(r, argv[4])) {
    std::fprintf(stderr, "could not write %s\n", argv[4]);
    return 1;
  }
  etnp_result_destroy(r);
  etnp_method_destroy(m);
  etnp_program_destroy(prog);
  etnp_runtime_destroy(rt);
  std::sort(ms.begin(), ms.end());
  std::printf("bench_harness %s (%s, %d threads, cpu %s): median %.3f ms, min %.3f ms over %d calls\n", argv[1], method,
              threads, etnp_cpu_features(), ms[ms.size() / 2], ms[0], n);
  return 0;
}
