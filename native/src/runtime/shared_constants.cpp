// Constants shared through the packed-weight cache: a program read into memory (not mapped) keeps
// the constants its kernels read in place - embedding tables, the weights of layers run by portable
// kernels - as program bytes of its own, private to each process. With a weight cache
// (load_program(path, weight_cache=...)) those bytes are also written to the cache file, one
// section per run of constants that touch or overlap (keyed by its offset and content hash); a later load that
// finds the section views its tensors in the cache file's read-only mapping (page-cache pages every
// process shares) and gives the program's copy back (Program::release; read back, checked, if a
// later method needs it).
//
// Only constants that nothing can write are viewed in the read-only mapping: none that an
// instruction has in an out position, passes to a delegate or a Python custom op, moves, or that
// the method returns; a kernel refuses to write a constant (resize_tensor, where every kernel sizes
// its outputs; check_writable, where the in-place ones write an argument). A program whose
// constants are small gains nothing: runs under kMinShared stay.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "kernels/callback_ops.h"
#include "runtime/method.h"
#include "runtime/weight_cache.h"

namespace etnp {

namespace {
constexpr size_t kMinShared = size_t(1) << 20;
constexpr char kTag[] = "etnp program constants v1";

Span tensor_span(const Tensor& t) { return Span{(const uint8_t*)t.data, std::max(t.capacity, t.nbytes())}; }
}  // namespace

// Values an instruction may write (or hand to code that may): kept out of the read-only mapping.
std::vector<bool> Method::written_values() const {
  std::vector<bool> w(values_.size(), false);
  auto mark = [&](const EValue* v) {
    const size_t i = (size_t)(v - values_.data());
    if (i >= values_.size()) return;
    w[i] = true;
    for (int64_t item : v->items)
      if (item >= 0 && (size_t)item < values_.size()) w[(size_t)item] = true;
  };
  for (int64_t i : inputs_) mark(&values_[(size_t)i]);
  for (int64_t o : outputs_) mark(&values_[(size_t)o]);
  for (const Instruction& x : instructions_) {
    if (x.kind == Instruction::Move) {
      mark(&values_[(size_t)x.a]);
      mark(&values_[(size_t)x.b]);
    }
    if (x.kind == Instruction::Delegate || (x.kind == Instruction::Kernel && x.fn == &callback_kernel)) {
      for (const EValue* a : x.args) mark(a);
      continue;
    }
    if (x.kind != Instruction::Kernel) continue;
    // an out variant's args end with its outs, then the same values again as its returns
    // (plan_checks.cpp): k = the args beyond the schema's
    const KernelEntry* ke = KernelRegistry::get().find(x.op);
    const size_t n = x.args.size(), k = ke && (size_t)ke->min_args < n ? n - (size_t)ke->min_args : 0;
    const size_t first_out = k && 2 * k <= n ? n - 2 * k : 0;  // (unknown: every argument)
    for (size_t j = first_out; j < n; j++) mark(x.args[j]);
  }
  return w;
}

void Method::share_constants(WeightCacheSession& cache) {
  // (a mapping's pages are the page cache's already; bytes given to from_bytes cannot be given back)
  if (!prog_->reads_file_copy()) return;
  const Span file = prog_->bytes_unchecked();
  const std::vector<bool> written = written_values();
  std::unordered_set<const uint8_t*> unsafe;  // data that some written value also has
  std::vector<Span> spans;
  for (size_t i = 0; i < values_.size(); i++) {
    const EValue& v = values_[i];
    if (v.tag != Tag::Tensor || !v.t.is_constant || !v.t.data || (const uint8_t*)v.t.data < file.data ||
        (const uint8_t*)v.t.data >= file.data + file.size)
      continue;
    if (written[i]) unsafe.insert((const uint8_t*)v.t.data);
    else spans.push_back(tensor_span(v.t));
  }
  // (runs of tensors that touch or overlap: a run bridging a gap could hold a written constant)
  for (const Span& run : merge_nearby(spans, 0)) {
    if (run.size < kMinShared) continue;
    bool safe = true;
    for (const uint8_t* d : unsafe) safe = safe && !(d >= run.data && d < run.data + run.size);
    if (!safe) continue;
    const size_t pad = (size_t)((uintptr_t)run.data % 64);  // (the section keeps each tensor's alignment)
    const uint64_t offset = (uint64_t)(run.data - file.data);
    ContentHash h;
    h.update(kTag, sizeof kTag);
    h.update(&offset, sizeof offset);
    h.update(run.data, run.size);
    const uint64_t key = h.value();
    const WeightCacheSession::Section s = cache.find(key);
    if (!s.data || s.size != pad + run.size) {
      cache.add(key, [run, pad](SectionWriter& w) {
        static const uint8_t zeros[64] = {};
        w.bytes(zeros, pad);
        w.bytes(run.data, run.size);
      });
      continue;
    }
    const uint8_t* base = s.data + pad;
    for (EValue& v : values_) {
      const uint8_t* d = (const uint8_t*)v.t.data;
      if (v.tag != Tag::Tensor || !v.t.is_constant || !d || d < run.data || d >= run.data + run.size) continue;
      prog_->unprotect(tensor_span(v.t));
      v.t.data = const_cast<uint8_t*>(base + (d - run.data));
    }
    prog_->release(run);
    shared_constants_ = cache.mapping();
    shared_constant_bytes_ += run.size;
  }
}

}  // namespace etnp
