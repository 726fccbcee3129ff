// race_harness MODEL THREADS ITERS: (1) THREADS threads share one runtime and one method;
// (1b) THREADS threads share one runtime and one program, each with its own method; (2) each
// thread owns its runtime; (3) methods outliving their program and runtime handles.
// Built with TSan: a data race makes the process exit non-zero.
//
// Results are checked against single-threaded calls of the same method on the same inputs
// (token ids in range for LLM programs, harness_util.h). A method with state (KV caches,
// etnp_method_num_state > 0) evolves with every call, so the reference is the sequence SEQ of
// results of consecutive calls on a freshly reset method:
//   (1)  the shared method, not reset, called THREADS x ITERS times concurrently: calls are
//        serialised per runtime, so the multiset of all results must be SEQ's first
//        THREADS x ITERS results (a call that saw a torn or half-updated state would differ);
//   (1b), (2) a thread's own method, reset every RESET calls: call i must give SEQ[i % RESET];
//   (3)  fresh methods, one call each: SEQ[0].
// Without state every SEQ entry is the same and these are plain equality checks.
#include <algorithm>
#include <thread>

#include "harness_util.h"

using Bytes = std::vector<unsigned char>;

static Bytes run_once(etnp_method* m, InputSet& s, bool* ok) {
  etnp_result* r = nullptr;
  Bytes out;
  if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r)) { *ok = false; return out; }
  etnp_value_meta meta;
  for (size_t i = 0; i < etnp_result_num_outputs(r); i++) {
    etnp_result_output_meta(r, i, &meta);
    size_t at = out.size();
    out.resize(at + meta.nbytes);
    if (meta.nbytes) etnp_result_copy_output(r, i, out.data() + at, meta.nbytes);
    // scalar outputs too (get_max_seq_len and the like, a counter)
    const unsigned char* iv = (const unsigned char*)&meta.int_value;
    out.insert(out.end(), iv, iv + sizeof meta.int_value);
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

static const int RESET = 3;  // (1b), (2): a thread's own method is reset every RESET calls

// ITERS calls of a method this thread owns, reset every RESET calls; each checked against SEQ.
static int own_method_calls(etnp_method* m, InputSet& s, const std::vector<Bytes>& seq, int iters) {
  int bad = 0;
  for (int i = 0; i < iters; i++) {
    if (i % RESET == 0 && etnp_method_reset(m)) bad++;
    bool k = true;
    if (run_once(m, s, &k) != seq[(size_t)(i % RESET)] || !k) bad++;
  }
  return bad;
}

int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: race_harness MODEL THREADS ITERS\n"); return 2; }
  int threads = std::atoi(argv[2]), iters = std::atoi(argv[3]);
  if (threads < 1 || iters < 1) { std::fprintf(stderr, "race_harness: THREADS and ITERS must be >= 1\n"); return 2; }
  etnp_runtime* rt = nullptr;
  etnp_program* prog = nullptr;
  etnp_runtime_create(2, &rt);
  etnp_method* m = open_method(rt, argv[1], &prog);
  const bool stateful = etnp_method_num_state(m) > 0;
  InputSet s;
  if (!make_inputs(m, s, (size_t)1 << 26, token_id_range(prog))) {
    std::fprintf(stderr, "race_harness: cannot make inputs for %s\n", argv[1]);
    return 1;
  }
  // the reference: consecutive single-threaded calls from the initial state
  const size_t total = (size_t)threads * (size_t)iters;
  std::vector<Bytes> seq;
  bool ok = etnp_method_reset(m) == ETNP_OK;
  for (size_t i = 0; i < (stateful ? std::max(total, (size_t)RESET) : 1); i++) seq.push_back(run_once(m, s, &ok));
  if (!ok) { std::fprintf(stderr, "race_harness: a single-threaded call failed: %s\n", etnp_last_error_message()); return 1; }
  if (!stateful) seq.resize((size_t)std::max(total, (size_t)RESET), seq[0]);
  else if (seq[0] == seq[1])
    std::printf("race_harness: note: the state does not change these inputs' results\n");
  std::vector<std::thread> ts;
  std::vector<int> bad(threads, 0);

  // (1) one shared method, not reset: the multiset of results must be SEQ's first TOTAL
  if (etnp_method_reset(m)) return 1;
  std::vector<std::vector<Bytes>> got(threads);
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      for (int i = 0; i < iters; i++) {
        bool k = true;
        got[t].push_back(run_once(m, s, &k));
        if (!k) bad[t]++;
      }
    });
  for (auto& t : ts) t.join();
  ts.clear();
  {
    std::vector<Bytes> all, want(seq.begin(), seq.begin() + (long)total);
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    std::sort(want.begin(), want.end());
    if (all != want) {
      std::fprintf(stderr, "race_harness: (1) the shared method's results are not those of %zu consecutive calls\n", total);
      bad[0]++;
    }
  }

  // (1b) one shared runtime and program, a method per thread (loaded concurrently)
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      etnp_method* mm = nullptr;
      if (etnp_method_load(prog, etnp_program_method_name(prog, 0), &mm)) { bad[t]++; return; }
      bad[t] += own_method_calls(mm, s, seq, iters);
      etnp_method_destroy(mm);
    });
  for (auto& t : ts) t.join();
  ts.clear();

  // (2) a runtime per thread
  for (int t = 0; t < threads; t++)
    ts.emplace_back([&, t] {
      etnp_runtime* own = nullptr;
      etnp_program* p = nullptr;
      etnp_runtime_create(2, &own);
      etnp_method* mm = open_method(own, argv[1], &p);
      bad[t] += own_method_calls(mm, s, seq, iters);
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
        if (run_once(batch[t], s, &k) != seq[0] || !k) bad[t]++;
        etnp_method_destroy(batch[t]);
      });
    bool k = true;
    if (run_once(keep, s, &k) != seq[0] || !k) bad[0]++;
    for (auto& t : ts) t.join();
    ts.clear();
    etnp_method_destroy(keep);
  }
  int mismatches = 0;
  for (int b : bad) mismatches += b;
  etnp_method_destroy(m);
  etnp_program_destroy(prog);
  etnp_runtime_destroy(rt);
  if (mismatches) { std::fprintf(stderr, "race_harness: %d mismatching results\n", mismatches); return 1; }
  std::printf("race_harness: %d threads x %d iters, shared method%s, per-thread methods and runtimes OK\n", threads,
              iters, stateful ? " (stateful: results = consecutive calls)" : "");
  return 0;
}
