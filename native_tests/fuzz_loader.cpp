// fuzz_loader SEEDS_DIR SECONDS [CRASH_DIR [MAX_EXECS]]: a mutation fuzzer for the .pte loader,
// the .ptd (external data) reader, the XNNPACK blob reader and the interpreter (seeds: .pte, .ptd,
// .bpte - see harness_util.h load_any -, crash-*, seed-*). Each execution mutates a seed (bit flips,
// interesting integers, truncation, splices, small numbers in aligned fields set to 0 / 1 / -1),
// loads it from bytes (a quarter of the programs that load: from a file, read in part -
// load_via_file), and when it loads, loads and runs every method on patterned inputs. Built with
// ASan+UBSan; on a crash the current input is written to CRASH_DIR for tests/fuzz_corpus/.
#include <algorithm>
#include <dirent.h>
#include <sanitizer/common_interface_defs.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "harness_util.h"

static std::vector<unsigned char> g_current;
static std::string g_crash_dir = ".";

static void save_current() {
  std::string path = g_crash_dir + "/crash-" + std::to_string(std::hash<std::string>()(
                                                   std::string(g_current.begin(), g_current.end())));
  std::ofstream(path, std::ios::binary).write((const char*)g_current.data(), (std::streamsize)g_current.size());
  std::fprintf(stderr, "fuzz_loader: crashing input written to %s\n", path.c_str());
}

// The aligned 32-bit field at J (little-endian), and whether it holds a small number (1..65536: a
// dim, a count, a value id, an offset) - what case 6 below and --sweep change.
static uint32_t field32(const std::vector<unsigned char>& b, size_t j) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) v |= (uint32_t)b[j + k] << (8 * k);
  return v;
}
static void set_field32(std::vector<unsigned char>& b, size_t j, uint32_t v) {
  for (int k = 0; k < 4; k++) b[j + k] = (unsigned char)(v >> (8 * k));
}
static bool small_number(uint32_t v) { return v >= 1 && v <= 65536; }

static void mutate(std::vector<unsigned char>& b, std::mt19937_64& rng, const std::vector<std::vector<unsigned char>>& seeds) {
  static const uint32_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu, 16, 64, 4096};
  int rounds = 1 + (int)(rng() % 4);
  for (int r = 0; r < rounds && !b.empty(); r++) {
    size_t i = rng() % b.size();
    switch (rng() % 8) {
      case 0: b[i] ^= (unsigned char)(1u << (rng() % 8)); break;
      case 1: b[i] = (unsigned char)rng(); break;
      case 2: {  // interesting 32-bit value
        uint32_t v = interesting[rng() % (sizeof(interesting) / 4)];
        for (int k = 0; k < 4 && i + k < b.size(); k++) b[i + k] = (unsigned char)(v >> (8 * k));
        break;
      }
      case 3: b.resize(i); break;  // truncate
      case 4: {  // splice from another seed
        const auto& o = seeds[rng() % seeds.size()];
        if (o.empty()) break;
        size_t j = rng() % o.size(), len = 1 + rng() % 64;
        for (size_t k = 0; k < len && i + k < b.size() && j + k < o.size(); k++) b[i + k] = o[j + k];
        break;
      }
      case 5: {  // small integer nudge of a 32-bit field
        uint32_t v = 0;
        for (int k = 0; k < 4 && i + k < b.size(); k++) v |= (uint32_t)b[i + k] << (8 * k);
        v += (uint32_t)((int)(rng() % 17) - 8);
        for (int k = 0; k < 4 && i + k < b.size(); k++) b[i + k] = (unsigned char)(v >> (8 * k));
        break;
      }
      case 6: {  // the next aligned 32-bit field holding a small number (a dim, a count, an id, an
                 // offset) set to 0, 1 or all ones: what found a division by a zero channel count
                 // and a read of a value nothing wrote (tests/fuzz_corpus/crash-depthwise-*, -convert-*)
        static const uint32_t to[] = {0, 1, 0xffffffffu};
        for (size_t j = i & ~(size_t)3; j + 4 <= b.size() && j < (i & ~(size_t)3) + 256; j += 4) {
          if (!small_number(field32(b, j))) continue;
          set_field32(b, j, to[rng() % 3]);
          break;
        }
        break;
      }
      case 7: {  // the next pair of equal neighbouring small fields (a kernel call's out and the return
                 // that repeats it, value ids) set to one smaller number: a kernel writing a constant
                 // (tools/state_sweep.py's pairs)
        for (size_t j = i & ~(size_t)3; j + 8 <= b.size() && j < (i & ~(size_t)3) + 256; j += 4) {
          const uint32_t v = field32(b, j);
          if (!small_number(v) || field32(b, j + 4) != v) continue;
          const uint32_t to = (uint32_t)(rng() % v);
          set_field32(b, j, to);
          set_field32(b, j + 4, to);
          break;
        }
        break;
      }
    }
  }
}

// A .pte input loaded from a file instead of from bytes: written with an old modification time, so
// that (with ETNP_READ_AT_ONCE=4096, set in main) the program reads it in part, as load_program
// reads a big file - the rest as its methods need it (Program::ensure / borrow).
static int load_via_file(etnp_runtime* rt, const std::vector<unsigned char>& b, etnp_program** prog) {
  const uint8_t* inner = nullptr;
  size_t inner_size = 0;
  if ((b.size() >= 8 && std::memcmp(b.data() + 4, "FT01", 4) == 0) || bundled_program(b.data(), b.size(), &inner, &inner_size))
    return load_any(rt, b.data(), b.size(), prog);
  const std::string path = g_crash_dir + "/partial-read.pte";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write((const char*)b.data(), (std::streamsize)b.size());
  const struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  utimensat(AT_FDCWD, path.c_str(), old, 0);
  return etnp_program_load_file(rt, path.c_str(), prog);
}

static void execute(etnp_runtime* rt, const std::vector<unsigned char>& b, bool run, bool via_file) {
  if (run) {  // UBSan's halt does not always reach the death callback: keep the input on disk
    std::ofstream(g_crash_dir + "/current-input", std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  }
  etnp_program* prog = nullptr;
  if ((via_file ? load_via_file(rt, b, &prog) : load_any(rt, b.data(), b.size(), &prog)) != ETNP_OK) return;
  const int64_t ids = run ? token_id_range(prog) : 1;
  for (size_t k = 0; k < etnp_program_num_methods(prog); k++) {
    etnp_method* m = nullptr;
    if (etnp_method_load(prog, etnp_program_method_name(prog, k), &m) != ETNP_OK) continue;
    InputSet s;
    if (run && make_inputs(m, s, 1 << 22, ids)) {
      etnp_result* r = nullptr;
      if (etnp_method_run(m, s.inputs.data(), s.inputs.size(), &r) == ETNP_OK) etnp_result_destroy(r);
    }
    etnp_method_destroy(m);
  }
  etnp_program_destroy(prog);
}

// --sweep: field_sweep.py's mutations, every one, under the sanitizers: each aligned 32-bit field of
// each seed holding a small number (1..65536) set to 0, 1, -1, one more and one less, one field at a
// time; each variant loaded and run (from the bytes). Seeds in file-name order, fields in order;
// FIRST / COUNT pick a slice of the seeds (a long sweep split over runs). Slow (minutes a seed):
// an exploration (README, native QA gates), not a CI step.
static int sweep(const std::vector<std::pair<std::string, std::vector<unsigned char>>>& seeds, size_t first,
                 size_t count) {
  etnp_runtime* rt = nullptr;
  etnp_runtime_create(1, &rt);
  uint64_t execs = 0;
  for (size_t f = first; f < seeds.size() && f < first + count; f++) {
    const std::vector<unsigned char>& b = seeds[f].second;
    uint64_t fields = 0;
    for (size_t pos = 0; pos + 4 <= b.size(); pos += 4) {
      const uint32_t v = field32(b, pos);
      if (!small_number(v)) continue;
      fields++;
      for (uint32_t to : {0u, 1u, 0xffffffffu, v + 1, v - 1}) {
        if (to == v || (to == 1 && v == 2) || (to == 0 && v == 1)) continue;  // (the same variant twice)
        g_current = b;
        set_field32(g_current, pos, to);
        execute(rt, g_current, true, false);
        execs++;
      }
    }
    std::printf("sweep: %s: %llu fields\n", seeds[f].first.c_str(), (unsigned long long)fields);
    std::fflush(stdout);
  }
  etnp_runtime_destroy(rt);
  std::printf("fuzz_loader --sweep: %llu executions, 0 crashes\n", (unsigned long long)execs);
  return 0;
}

int main(int argc, char** argv) {
  const bool sweeping = argc > 1 && std::strcmp(argv[1], "--sweep") == 0;
  if (sweeping) argv++, argc--;
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_loader SEEDS_DIR SECONDS [CRASH_DIR [MAX_EXECS]]\n"
                         "       fuzz_loader --sweep SEEDS_DIR CRASH_DIR [FIRST [COUNT]]\n");
    return 2;
  }
  g_crash_dir = sweeping ? argv[2] : argc > 3 ? argv[3] : ".";
  std::vector<std::pair<std::string, std::vector<unsigned char>>> named;
  std::string dir = argv[1];
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && (n.substr(n.size() - 4) == ".pte" || n.substr(n.size() - 4) == ".ptd" ||
                          n.substr(n.size() - 5) == ".bpte" || n.rfind("crash-", 0) == 0 || n.rfind("seed-", 0) == 0)) {
        std::ifstream f(dir + "/" + n, std::ios::binary);
        std::vector<unsigned char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (v.size() <= (1u << 20)) named.emplace_back(n, std::move(v));  // small seeds only: fast executions
      }
    }
    closedir(d);
  }
  if (named.empty()) { std::fprintf(stderr, "no seeds in %s\n", argv[1]); return 2; }
  __sanitizer_set_death_callback(save_current);
  if (sweeping) {
    std::sort(named.begin(), named.end());
    return sweep(named, argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0,
                 argc > 4 ? std::strtoull(argv[4], nullptr, 10) : named.size());
  }
  std::vector<std::vector<unsigned char>> seeds;
  for (auto& nv : named) seeds.push_back(std::move(nv.second));
  // readdir order differs between file systems: sort, so that a run is the same everywhere
  std::sort(seeds.begin(), seeds.end());
  double seconds = std::atof(argv[2]);
  // optional 4th argument: stop after this many executions (with the fixed RNG seed below, a
  // capped run mutates exactly the same inputs on every machine)
  uint64_t max_execs = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  setenv("ETNP_READ_AT_ONCE", "4096", 1);  // (load_via_file: small programs read in part too)
  std::mt19937_64 rng(12345);
  etnp_runtime* rt = nullptr;
  etnp_runtime_create(1, &rt);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t execs = 0, loaded = 0;
  for (;;) {
    for (int k = 0; k < 64; k++, execs++) {
      g_current = seeds[rng() % seeds.size()];
      mutate(g_current, rng, seeds);
      etnp_program* p = nullptr;
      if (load_any(rt, g_current.data(), g_current.size(), &p) == ETNP_OK) {
        loaded++;
        etnp_program_destroy(p);
        execute(rt, g_current, (execs & 7) == 0, (execs & 3) == 0);
      }
    }
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (el >= seconds || (max_execs && execs >= max_execs)) break;
  }
  etnp_runtime_destroy(rt);
  std::printf("fuzz_loader: %llu executions (%llu loaded), 0 crashes\n", (unsigned long long)execs,
              (unsigned long long)loaded);
  return 0;
}
