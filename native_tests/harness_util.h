// Shared helpers of the native harnesses: build zero/seeded inputs from a method's metadata.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "etnp.h"

struct InputSet {
  std::vector<etnp_input> inputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<unsigned char>> data;
};

static size_t dtype_bytes(int dt) {
  switch (dt) {
    case ETNP_DTYPE_UINT8: case ETNP_DTYPE_INT8: case ETNP_DTYPE_BOOL: return 1;
    case ETNP_DTYPE_INT16: case ETNP_DTYPE_FLOAT16: case ETNP_DTYPE_BFLOAT16: return 2;
    case ETNP_DTYPE_INT32: case ETNP_DTYPE_FLOAT32: return 4;
    default: return 8;
  }
}

// The integer value of a scalar output (an INT, or a one-element integer tensor), or -1.
static int64_t scalar_output(const etnp_result* r, size_t i) {
  etnp_value_meta meta;
  if (etnp_result_output_meta(r, i, &meta) != ETNP_OK) return -1;
  if (meta.kind == ETNP_KIND_INT) return meta.int_value;
  if (meta.kind == ETNP_KIND_TENSOR && meta.nbytes == 8 && meta.dtype == ETNP_DTYPE_INT64) {
    int64_t v = -1;
    if (etnp_result_copy_output(r, i, &v, 8) == ETNP_OK) return v;
  }
  return -1;
}

// The range of valid token ids of an LLM program (its get_vocab_size method, as ExecuTorch's
// llama exports have), or 1 for any other program: make_inputs then fills integer inputs with
// zeros, valid indices wherever they go.
static int64_t token_id_range(etnp_program* prog) {
  for (size_t k = 0; k < etnp_program_num_methods(prog); k++) {
    if (std::strcmp(etnp_program_method_name(prog, k), "get_vocab_size") != 0) continue;
    etnp_method* m = nullptr;
    etnp_result* r = nullptr;
    int64_t v = -1;
    if (etnp_method_load(prog, "get_vocab_size", &m) == ETNP_OK) {
      if (etnp_method_run(m, nullptr, 0, &r) == ETNP_OK) {
        if (etnp_result_num_outputs(r) == 1) v = scalar_output(r, 0);
        etnp_result_destroy(r);
      }
      etnp_method_destroy(m);
    }
    return v > 1 && v < ((int64_t)1 << 30) ? v : 1;
  }
  return 1;
}

// Inputs of the planned shapes (the upper bounds of dynamic ones), filled with a deterministic
// pattern: floats in [-1, 1); integers zero, except that with id_range > 1 (token_id_range) the
// integer tensors of more than one element (token ids) cycle through ids in [0, id_range) - the
// one-element ones (input_pos, a cache index) stay 0, so that a KV-cache method starts at the
// first position with as many tokens as its cache takes.
static bool make_inputs(etnp_method* m, InputSet& s, size_t max_bytes = (size_t)1 << 26, int64_t id_range = 1) {
  size_t n = etnp_method_num_inputs(m);
  s.inputs.resize(n);
  s.shapes.resize(n);
  s.data.resize(n);
  for (size_t i = 0; i < n; i++) {
    etnp_value_meta meta;
    if (etnp_method_input_meta(m, i, &meta) != ETNP_OK) return false;
    etnp_input& in = s.inputs[i];
    std::memset(&in, 0, sizeof(in));
    in.kind = meta.kind;
    if (meta.kind != ETNP_KIND_TENSOR) continue;
    size_t numel = 1;
    for (int d = 0; d < meta.ndim; d++) numel *= (size_t)meta.sizes[d];
    size_t bytes = numel * dtype_bytes(meta.dtype);
    if (bytes > max_bytes) return false;
    s.shapes[i].assign(meta.sizes, meta.sizes + meta.ndim);
    s.data[i].assign(bytes, 0);
    if (meta.dtype == ETNP_DTYPE_FLOAT32)
      for (size_t k = 0; k < numel; k++) {
        float v = (float)((k * 37 % 101) - 50) / 50.f;
        std::memcpy(&s.data[i][k * 4], &v, 4);
      }
    if (id_range > 1 && numel > 1 && (meta.dtype == ETNP_DTYPE_INT64 || meta.dtype == ETNP_DTYPE_INT32))
      for (size_t k = 0; k < numel; k++) {
        int64_t v = (int64_t)((k * 37 + 1) % (uint64_t)id_range);
        if (meta.dtype == ETNP_DTYPE_INT64) std::memcpy(&s.data[i][k * 8], &v, 8);
        else { int32_t v32 = (int32_t)v; std::memcpy(&s.data[i][k * 4], &v32, 4); }
      }
    in.dtype = meta.dtype;
    in.ndim = meta.ndim;
    in.sizes = s.shapes[i].data();
    in.data = s.data[i].data();
    in.nbytes = bytes;
  }
  return true;
}

// ---- inputs of every format the fuzzers mutate ----

static std::vector<uint8_t> read_file_bytes(const char* path) {
  std::vector<uint8_t> b;
  if (FILE* f = std::fopen(path, "rb")) {
    unsigned char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
    std::fclose(f);
  }
  return b;
}

// A .ptd (FlatTensor, "FT01") input is fuzzed as the external weights of a fixed program whose
// weights live outside it (tests/models/mlp_external.pte, read once from the working directory).
static const std::vector<uint8_t>& external_program() {
  static const std::vector<uint8_t> bytes = read_file_bytes("tests/models/mlp_external.pte");
  return bytes;
}

// The program a bundled program (.bpte, "BP08": BundledProgram{version, method_test_suites,
// program: [ubyte]}) holds, found as executorch_numpy_runtime/bundled.py finds it (every read
// bounds-checked); false when there is none. The test cases are read in Python only (bundled.py:
// tools/fuzz_python.py fuzzes them); here a mutated bundle reaches the core through its program.
static bool bundled_program(const uint8_t* d, size_t n, const uint8_t** prog, size_t* size) {
  auto u32 = [&](size_t pos, uint32_t* v) {
    if (pos > n || n - pos < 4) return false;
    *v = (uint32_t)d[pos] | (uint32_t)d[pos + 1] << 8 | (uint32_t)d[pos + 2] << 16 | (uint32_t)d[pos + 3] << 24;
    return true;
  };
  auto u16 = [&](size_t pos, uint32_t* v) {
    if (pos > n || n - pos < 2) return false;
    *v = (uint32_t)d[pos] | (uint32_t)d[pos + 1] << 8;
    return true;
  };
  uint32_t root, soff, vsize, off, rel, len;
  if (n < 8 || std::memcmp(d + 4, "BP08", 4) != 0 || !u32(0, &root) || !u32(root, &soff)) return false;
  int64_t vt = (int64_t)root - (int64_t)(int32_t)soff;  // the vtable: table - soffset
  if (vt < 0 || !u16((size_t)vt, &vsize) || vsize < 4 + 2 * 2 + 2 || !u16((size_t)vt + 4 + 2 * 2, &off) || !off)
    return false;
  size_t field = (size_t)root + off;
  if (!u32(field, &rel)) return false;
  size_t vec = field + rel;
  if (!u32(vec, &len) || len == 0 || vec + 4 > n || n - (vec + 4) < len) return false;
  *prog = d + vec + 4;
  *size = len;
  return true;
}

// Loads a fuzzed input by its identifier: .ptd as the external data of external_program(), .bpte
// through the program it bundles, anything else as a .pte. ETNP_OK or the load's error.
static int load_any(etnp_runtime* rt, const uint8_t* data, size_t size, etnp_program** prog) {
  *prog = nullptr;
  if (size >= 8 && std::memcmp(data + 4, "FT01", 4) == 0) {
    const std::vector<uint8_t>& pte = external_program();
    if (pte.empty()) return ETNP_ERR_INVALID_ARGUMENT;
    int rc = etnp_program_load_bytes(rt, pte.data(), pte.size(), prog);
    if (rc != ETNP_OK) return rc;
    rc = etnp_program_add_data(*prog, data, size, "fuzz.ptd");
    if (rc != ETNP_OK) {
      etnp_program_destroy(*prog);
      *prog = nullptr;
    }
    return rc;
  }
  const uint8_t* inner = nullptr;
  size_t inner_size = 0;
  if (bundled_program(data, size, &inner, &inner_size)) return etnp_program_load_bytes(rt, inner, inner_size, prog);
  return etnp_program_load_bytes(rt, data, size, prog);
}
