// The delegate (backend) interface: a backend is registered by id, initialised from the
// processed blob + compile specs at method load, executed with the delegate call's
// EValues (inputs then outputs), and destroyed with the method.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/evalue.h"
#include "kernels/registry.h"
#include "runtime/program.h"

namespace etnp {

struct CompileSpec {
  std::string key;
  std::vector<uint8_t> value;
};

// Bytes a delegate holds, by kind (etnp_method_memory_stats)
struct DelegateMemory {
  uint64_t packed_weights = 0, constants = 0, values = 0, scratch = 0;
  uint64_t mapped_weights = 0;  // packed weights viewed in a weight cache file's read-only mapping
};

class DelegateHandle {
 public:
  virtual ~DelegateHandle() = default;
  virtual void execute(KernelContext& ctx, EValue** args, size_t nargs) = 0;
  virtual void add_memory(DelegateMemory&) const {}
  // Set at method load, before the first call, where the method's weights are more than the
  // CPU's last-level cache holds (Method::stream_weights): every call then reads them from memory
  // once, as a stream, and kernels that stream weights prefetch them non-temporally - so they do
  // not evict what the rest of the call reuses from the caches (activations, the interpreter's
  // records, a KV cache). Weights that fit stay cached from call to call: read as usual.
  virtual void set_weights_stream(bool) {}
  // Positions of the call's outputs among its arguments (false: not known - every argument may be
  // written).
  virtual bool output_args(std::vector<size_t>&) const { return false; }
};

class WeightCacheSession;
struct BackendInit {
  // the delegate's data: bytes perhaps not read from the file yet - the delegate ensures the
  // parts it reads (Program::ensure) before it reads them
  Span blob;
  const std::vector<CompileSpec>* specs;
  const Program* program;  // resolves named data
  int num_threads;
  // The program bytes the delegate read only to build its own copies (packed weights, decoded
  // constants), which the program may give back once the method has loaded (Program::release):
  // the delegate appends them (its blob, the named data it copied).
  std::vector<Span>* consumed = nullptr;
  // The method load's weight cache (runtime/weight_cache.h), or null: a delegate looks its packed
  // weights up there, or adds them after packing.
  class WeightCacheSession* weight_cache = nullptr;
};

struct Backend {
  const char* id;
  std::unique_ptr<DelegateHandle> (*init)(const BackendInit& init);
};

const std::vector<Backend>& backends();
const Backend* find_backend(const std::string& id);

std::unique_ptr<DelegateHandle> xnnpack_init(const BackendInit& init);

}  // namespace etnp
