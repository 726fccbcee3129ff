// Building a Method from its ExecutionPlan: the planned buffers, the values parsed from the
// program's flatbuffer tables, the instructions (kernels looked up, delegates initialised), the
// state tensors; what only packing read of the program's bytes is given back as it goes.
// Running it (inputs, the interpreter loop, profiling captures) is method.cpp.
#include "runtime/method.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/callback_ops.h"
#include "os/pages.h"
#include "runtime/runtime.h"
#include "runtime/weight_cache.h"
#include "util/compiler.h"

namespace etnp {

namespace {
bool all_zero(Span s) {
  static const uint8_t zeros[4096] = {};
  for (size_t at = 0; at < s.size; at += sizeof zeros)
    if (std::memcmp(s.data + at, zeros, std::min(sizeof zeros, s.size - at)) != 0) return false;
  return true;
}
// ExecutionPlan fields
enum { EP_NAME = 0, EP_VALUES = 2, EP_INPUTS = 3, EP_OUTPUTS = 4, EP_CHAINS = 5, EP_OPERATORS = 6,
       EP_DELEGATES = 7, EP_BUFFER_SIZES = 8 };
// Tensor fields
enum { T_SCALAR_TYPE = 0, T_STORAGE_OFFSET = 1, T_SIZES = 2, T_DIM_ORDER = 3, T_DATA_BUFFER_IDX = 5, T_ALLOCATION = 6,
       T_DYNAMISM = 8, T_EXTRA = 9 };
constexpr uint64_t kMaxBufferBytes = 64ull << 30;

std::string op_full_name(const fb::Table& op) {
  std::string n = op.string(0), ov = op.string(1);
  return ov.empty() ? n : n + "." + ov;
}
}  // namespace

std::vector<std::string> plan_operator_names(const fb::Table& plan) {
  std::vector<std::string> out;
  fb::Vector ops = plan.vector(EP_OPERATORS, 4);
  for (uint32_t i = 0; i < ops.size(); i++) out.push_back(op_full_name(ops.table(i)));
  return out;
}

std::vector<std::string> plan_delegate_ids(const fb::Table& plan) {
  std::vector<std::string> out;
  fb::Vector d = plan.vector(EP_DELEGATES, 4);
  for (uint32_t i = 0; i < d.size(); i++) out.push_back(d.table(i).string(0));
  return out;
}

size_t plan_num_io(const fb::Table& plan, bool output) { return plan.vector(output ? EP_OUTPUTS : EP_INPUTS, 4).size(); }

EValue plan_io_value(const fb::Table& plan, bool output, size_t i) {
  fb::Vector io = plan.vector(output ? EP_OUTPUTS : EP_INPUTS, 4), vals = plan.vector(EP_VALUES, 4);
  if (i >= io.size()) throw Error(ETNP_ERR_INVALID_ARGUMENT, "index out of range");
  int32_t idx = io.at<int32_t>((uint32_t)i);
  if (idx < 0 || (uint32_t)idx >= vals.size()) throw_load("method input/output refers to a value outside the table");
  fb::Table ev = vals.table((uint32_t)idx);
  uint8_t ut = ev.scalar<uint8_t>(0);
  EValue v;
  if (ut > 11) throw_load("value has an unknown kind " + std::to_string(ut));
  v.tag = ut <= 1 ? Tag::None : (Tag)(ut - 1);
  if (v.tag != Tag::Tensor) return v;
  fb::Table t = ev.table(1);
  if (!t) throw_load("tensor value has no payload");
  int8_t st = t.scalar<int8_t>(T_SCALAR_TYPE);
  if (!dtype_supported(st)) throw_load("tensor of unsupported dtype " + scalar_type_name(st));
  v.t.dtype = (DType)st;
  fb::Vector sizes = t.vector(T_SIZES, 4);
  if (sizes.size() > (uint32_t)kMaxDims) throw_load("tensor rank " + std::to_string(sizes.size()) + " exceeds 16");
  v.t.dim = (int)sizes.size();
  int64_t numel = 1;
  for (int k = 0; k < v.t.dim; k++) {
    int32_t s = sizes.at<int32_t>((uint32_t)k);
    if (s < 0) throw_load("tensor has a negative size");
    if (etnp::mul_overflow(numel, (int64_t)s, &numel) || numel > (int64_t)kMaxBufferBytes)
      throw_load("tensor size overflows");
    v.t.sizes[k] = s;
  }
  int8_t dyn = t.scalar<int8_t>(T_DYNAMISM);
  v.t.dynamism = dyn == 1 ? Dynamism::Bound : dyn == 2 ? Dynamism::Unbound : Dynamism::Static;
  fb::Vector order = t.vector(T_DIM_ORDER, 1);
  bool valid = order.size() == (uint32_t)v.t.dim;
  for (int k = 0; k < v.t.dim; k++) v.t.dim_order[k] = valid ? order.at<uint8_t>((uint32_t)k) : (uint8_t)k;
  return v;
}

Method::Method(std::shared_ptr<Program> prog, const std::string& name) : prog_(std::move(prog)), name_(name) {
  fb::Table plan = prog_->plan(name);
  // Planned memory: non_const_buffer_sizes[0] is reserved.
  fb::Vector bs = plan.vector(EP_BUFFER_SIZES, 8);
  for (uint32_t i = 1; i < bs.size(); i++) {
    int64_t sz = bs.at<int64_t>(i);
    if (sz < 0 || (uint64_t)sz > kMaxBufferBytes)
      throw_load("planned buffer " + std::to_string(i) + " has an invalid size " + std::to_string(sz));
    // (pages that no call writes are never resident: PlannedBuffer)
    buffers_.push_back(std::make_unique<PlannedBuffer>((size_t)sz));
    if (!buffers_.back()->data())
      throw_load("cannot allocate planned buffer " + std::to_string(i) + " of " + std::to_string(sz) + " bytes");
  }
  parse_values(plan);
  fb::Vector in = plan.vector(EP_INPUTS, 4), out = plan.vector(EP_OUTPUTS, 4);
  for (uint32_t i = 0; i < in.size(); i++) {
    int32_t idx = in.at<int32_t>(i);
    if (idx < 0 || (size_t)idx >= values_.size()) throw_load("method input index out of range");
    inputs_.push_back(idx);
    planned_inputs_.push_back(values_[idx]);
  }
  for (uint32_t i = 0; i < out.size(); i++) {
    int32_t idx = out.at<int32_t>(i);
    if (idx < 0 || (size_t)idx >= values_.size()) throw_load("method output index out of range");
    outputs_.push_back(idx);
  }
  protect_tensor_data();
  // the program's packed-weight cache: read by each delegate and for the constants, written once
  // the method has loaded
  std::unique_ptr<WeightCacheSession> weight_cache;
  const std::string cache_path = prog_->weight_cache();
  if (!cache_path.empty()) weight_cache = std::make_unique<WeightCacheSession>(cache_path);
  prepare_instructions(plan, weight_cache.get());  // (gives back each delegate's consumed bytes after its packing)
  check_plan_consistency();
  fold_constant_copies();
  collect_state();
  update_state_in_place();
  for (const State& s : state_)
    if (s.init.data) prog_->protect(s.init);
  fuse_chains();
  elide_copies();
  if (weight_cache) {
    share_constants(*weight_cache);  // runtime/shared_constants.cpp
    weight_cache->finish();
  }
}

// What the method reads of the program's bytes during calls stays in memory (Program::protect):
// its tensors' data inside the file (constants, initial state); what only a delegate's packing
// read is given back as soon as that delegate is ready (Program::release), so loading holds the
// file's bytes and the packed weights together for one delegate at a time, not for all.
void Method::protect_tensor_data() {
  const Span file = prog_->bytes_unchecked();
  for (const EValue& v : values_)
    if (v.tag == Tag::Tensor && v.t.data && (const uint8_t*)v.t.data >= file.data &&
        (const uint8_t*)v.t.data < file.data + file.size)
      prog_->protect(Span{(const uint8_t*)v.t.data, std::max(v.t.capacity, v.t.nbytes())});
}

void Method::parse_tensor(const fb::Table& t, EValue& v) {
  Tensor& x = v.t;
  int8_t st = t.scalar<int8_t>(T_SCALAR_TYPE);
  if (!dtype_supported(st))
    throw_load("tensor of unsupported dtype " + scalar_type_name(st));
  x.dtype = (DType)st;
  fb::Vector sizes = t.vector(T_SIZES, 4);
  if (sizes.size() > (uint32_t)kMaxDims) throw_load("tensor rank " + std::to_string(sizes.size()) + " exceeds 16");
  x.dim = (int)sizes.size();
  int64_t numel = 1, span = 1;
  for (int i = 0; i < x.dim; i++) {
    int32_t s = sizes.at<int32_t>(i);
    if (s < 0) throw_load("tensor has a negative size");
    x.sizes[i] = s;
    if (etnp::mul_overflow(numel, (int64_t)s, &numel) || numel > (int64_t)(kMaxBufferBytes))
      throw_load("tensor size overflows");
    // strides multiply the non-zero sizes: bound them too (a zero dim hides nothing)
    if (etnp::mul_overflow(span, (int64_t)(s ? s : 1), &span) || span > (int64_t)(kMaxBufferBytes))
      throw_load("tensor size overflows");
  }
  fb::Vector order = t.vector(T_DIM_ORDER, 1);
  if (!order.empty() && (int)order.size() != x.dim) throw_load("tensor dim_order length differs from its rank");
  unsigned seen = 0;
  for (int i = 0; i < x.dim; i++) {
    uint8_t d = order.empty() ? (uint8_t)i : order.at<uint8_t>(i);
    if (d >= x.dim || (seen & (1u << d))) throw_load("tensor dim_order is not a permutation");
    seen |= 1u << d;
    x.dim_order[i] = d;
  }
  x.compute_strides();
  int8_t dyn = t.scalar<int8_t>(T_DYNAMISM);
  if (dyn < 0 || dyn > 2) throw_load("tensor has an unknown shape_dynamism");
  x.dynamism = (Dynamism)dyn;
  size_t nbytes = (size_t)numel * x.elem_size();
  if (int32_t so = t.scalar<int32_t>(T_STORAGE_OFFSET))  // ExecuTorch supports only 0 (program.fbs)
    throw_load("tensor has storage_offset " + std::to_string(so) + "; only 0 is supported");
  fb::Table extra = t.table(T_EXTRA);
  uint32_t buf_idx = t.scalar<uint32_t>(T_DATA_BUFFER_IDX);
  fb::Table alloc = t.table(T_ALLOCATION);
  if (extra && extra.scalar<int8_t>(2) == 1) {  // ExtraTensorInfo.location EXTERNAL: a named key in a .ptd
    std::string key = extra.string(1);
    if (key.empty()) throw_load("tensor keeps its data in an external file but has no name");
    if (alloc) throw_load("external tensor '" + key + "' also has a planned allocation");
    Span d = prog_->named_data(key);
    if (!d.data) throw_load("tensor '" + key + "' keeps its data in an external .ptd file, and no data file has that key" +
                            prog_->data_files_note());
    if (d.size < nbytes)
      throw_load("external tensor '" + key + "' has " + std::to_string(d.size) + " bytes of data, its shape needs " +
                 std::to_string(nbytes));
    if ((uintptr_t)d.data % x.elem_size()) throw_load("external tensor '" + key + "' data is misaligned for its dtype");
    x.data = const_cast<uint8_t*>(d.data);
    x.capacity = nbytes;
    x.is_constant = true;
    return;
  }
  if (alloc) {
    uint32_t mem_id = alloc.scalar<uint32_t>(0);
    uint64_t off = alloc.scalar<uint32_t>(1) | ((uint64_t)alloc.scalar<uint32_t>(2) << 32);
    if (mem_id == 0 || mem_id > buffers_.size())
      throw_load("tensor memory id " + std::to_string(mem_id) + " names no planned buffer (" +
                 std::to_string(buffers_.size()) + " planned)");
    size_t bsz = buffers_[mem_id - 1]->size();
    if (off > bsz || nbytes > bsz - off) throw_load("planned tensor lies outside its memory buffer");
    if (off % x.elem_size()) throw_load("planned tensor offset " + std::to_string(off) + " is misaligned for its dtype");
    x.data = buffer_base((size_t)mem_id - 1) + off;
    x.capacity = nbytes;
    if (buf_idx > 0) {  // a mutable buffer: its initial contents come from mutable_data_segments
      Span init = prog_->mutable_data(buf_idx, nbytes, extra ? extra.scalar<uint64_t>(0) : 0);
      if (!init.data && nbytes)
        throw_load("tensor has constant data index " + std::to_string(buf_idx) +
                   " and a planned allocation, but the program has no mutable data for it");
      // (the buffer is zeros: pages the initial data leaves zero - an all-zero KV cache - stay
      // unwritten, and all-zero initial data is not kept: reset_state zeroes)
      if (init.data) {
        os::copy_changed_pages(x.data, init.data, nbytes);
        if (all_zero(init)) {
          prog_->release(init);
          init = Span{};
        }
      }
      std::string name = extra ? extra.string(1) : std::string();
      state_.push_back(State{(int64_t)(&v - values_.data()), init, name});
    }
  } else if (buf_idx > 0) {
    Span c = prog_->constant(buf_idx, nbytes);
    if ((uintptr_t)c.data % x.elem_size()) throw_load("constant tensor data is misaligned for its dtype");
    x.data = const_cast<uint8_t*>(c.data);
    x.capacity = nbytes;
    x.is_constant = true;
  }
}

void Method::parse_values(const fb::Table& plan) {
  fb::Vector vals = plan.vector(EP_VALUES, 4);
  values_.resize(vals.size());
  auto check_index = [&](int64_t i, bool allow_none) {
    if ((allow_none && i == -1) || (i >= 0 && (uint64_t)i < vals.size())) return;
    throw_load("list item refers to value " + std::to_string(i) + " outside the value table");
  };
  for (uint32_t i = 0; i < vals.size(); i++) {
    fb::Table ev = vals.table(i);
    uint8_t ut = ev.scalar<uint8_t>(0);
    fb::Table val = ev.table(1);
    EValue& v = values_[i];
    if (ut > 11) throw_load("value " + std::to_string(i) + " has an unknown kind " + std::to_string(ut));
    if (ut <= 1) { v.tag = Tag::None; continue; }
    if (!val) throw_load("value " + std::to_string(i) + " has no payload");
    v.tag = (Tag)(ut - 1);
    switch (v.tag) {
      case Tag::Int: v.i = val.scalar<int64_t>(0); break;
      case Tag::Bool: v.i = val.scalar<uint8_t>(0) != 0; break;
      case Tag::Double: v.d = val.scalar<double>(0); break;
      case Tag::String: v.s = val.string(0); break;
      case Tag::Tensor:
        try {
          parse_tensor(val, v);
        } catch (const Error& e) {  // name the value
          throw Error(e.code(), "value " + std::to_string(i) + ": " + e.what(), e.detail());
        }
        break;
      case Tag::IntList: case Tag::TensorList: case Tag::OptTensorList: {
        bool is_int = v.tag == Tag::IntList;
        fb::Vector it = val.vector(0, is_int ? 8 : 4);
        for (uint32_t k = 0; k < it.size(); k++) {
          int64_t idx = is_int ? it.at<int64_t>(k) : it.at<int32_t>(k);
          check_index(idx, v.tag == Tag::OptTensorList);
          v.items.push_back(idx);
        }
        break;
      }
      case Tag::DoubleList: {
        fb::Vector it = val.vector(0, 8);
        for (uint32_t k = 0; k < it.size(); k++) v.doubles.push_back(it.at<double>(k));
        break;
      }
      case Tag::BoolList: {
        fb::Vector it = val.vector(0, 1);
        for (uint32_t k = 0; k < it.size(); k++) v.bools.push_back(it.at<uint8_t>(k) != 0);
        break;
      }
      default: break;
    }
  }
  // List items must have the kinds their list promises.
  for (auto& v : values_) {
    for (int64_t idx : v.items) {
      if (idx < 0) continue;
      Tag want = v.tag == Tag::IntList ? Tag::Int : Tag::Tensor;
      if (values_[idx].tag != want && !(v.tag == Tag::OptTensorList && values_[idx].tag == Tag::None))
        throw_load(std::string("a ") + tag_name(v.tag) + " holds a " + tag_name(values_[idx].tag));
    }
  }
}

void Method::prepare_instructions(const fb::Table& plan, WeightCacheSession* weight_cache) {
  fb::Vector dels = plan.vector(EP_DELEGATES, 4);
  for (uint32_t i = 0; i < dels.size(); i++) {
    fb::Table d = dels.table(i);
    std::string id = d.string(0);
    const Backend* be = find_backend(id);
    if (!be) throw Error(ETNP_ERR_BACKEND_NOT_AVAILABLE, "method '" + name_ + "' is lowered to backend '" + id +
                         "', which this runtime does not include (available: XnnpackBackend)", id);
    fb::Table ref = d.table(1);
    if (!ref) throw_load("delegate " + std::to_string(i) + " has no processed data");
    int8_t loc = ref.scalar<int8_t>(0);
    uint32_t index = ref.scalar<uint32_t>(1);
    // (a segment's bytes are read by the delegate, as far as it needs them: BackendInit::blob)
    Span blob = loc == 0 ? prog_->inline_delegate_data(index) : loc == 1 ? prog_->segment(index, false) : Span{};
    if (loc != 0 && loc != 1) throw_load("delegate data has an unknown location");
    std::vector<CompileSpec> specs;
    fb::Vector cs = d.vector(2, 4);
    for (uint32_t k = 0; k < cs.size(); k++) {
      fb::Table c = cs.table(k);
      fb::Vector val = c.vector(1, 1);
      specs.push_back(CompileSpec{c.string(0), std::vector<uint8_t>(val.raw(), val.raw() + val.size())});
    }
    std::vector<Span> consumed;
    BackendInit init{blob, &specs, prog_.get(), prog_->runtime().pool().num_threads(), &consumed};
    init.weight_cache = weight_cache;
    delegates_.push_back(be->init(init));
    // (a delegate's named data is one small segment per tensor, each too small to give back
    // alone - Program::release takes whole pages -, together most of the file)
    for (const Span& s : merge_nearby(consumed, os::page_size())) prog_->release(s);
  }
  stream_weights();

  std::vector<std::string> ops = plan_operator_names(plan);
  std::vector<const KernelEntry*> kernels(ops.size(), nullptr);
  std::vector<std::shared_ptr<const CallbackOp>> callbacks(ops.size());
  fb::Vector chains = plan.vector(EP_CHAINS, 4);
  auto value_ptr = [&](int64_t idx) {
    if (idx < 0 || (size_t)idx >= values_.size()) throw_load("instruction refers to value " + std::to_string(idx) +
                                                             " outside the value table");
    return &values_[idx];
  };
  for (uint32_t c = 0; c < chains.size(); c++) {
    fb::Vector ins = chains.table(c).vector(2, 4);
    size_t chain_start = instructions_.size();
    for (uint32_t k = 0; k < ins.size(); k++) {
      fb::Table in = ins.table(k);
      uint8_t ty = in.scalar<uint8_t>(0);
      fb::Table a = in.table(1);
      if (!a) throw_load("instruction " + std::to_string(k) + " has no arguments");
      Instruction x{};
      switch (ty) {
        case 1: case 2: {
          int32_t index = a.scalar<int32_t>(0);
          fb::Vector args = a.vector(1, 4);
          for (uint32_t j = 0; j < args.size(); j++) x.args.push_back(value_ptr(args.at<int32_t>(j)));
          if (ty == 1) {
            if (index < 0 || (size_t)index >= ops.size()) throw_load("kernel call names operator index out of range");
            if (!kernels[index] && !callbacks[index]) {
              kernels[index] = KernelRegistry::get().find(ops[index]);
              if (!kernels[index]) callbacks[index] = find_callback_op(ops[index]);
              if (!kernels[index] && !callbacks[index])
                throw Error(ETNP_ERR_OPERATOR_NOT_FOUND, "operator '" + ops[index] + "' (used by method '" + name_ +
                            "') has no kernel in this runtime", ops[index]);
              if (callbacks[index]) callback_ops_.push_back(callbacks[index]);
            }
            if (callbacks[index]) {
              x.kind = Instruction::Kernel;
              x.fn = &callback_kernel;
              x.user = callbacks[index].get();
              x.op = callbacks[index]->name.c_str();
              break;
            }
            const KernelEntry* ke = kernels[index];
            if ((int)x.args.size() < ke->min_args)
              throw_load("kernel call to " + ops[index] + " has " + std::to_string(x.args.size()) +
                         " arguments, expected at least " + std::to_string(ke->min_args));
            x.kind = Instruction::Kernel;
            x.fn = ke->fn;
            x.op = ke->name.c_str();
          } else {
            if (index < 0 || (size_t)index >= delegates_.size()) throw_load("delegate call index out of range");
            x.kind = Instruction::Delegate;
            x.delegate = delegates_[index].get();
            x.op = "XnnpackBackend";
          }
          break;
        }
        case 3:
          x.kind = Instruction::Move;
          x.a = a.scalar<int32_t>(0);
          x.b = a.scalar<int32_t>(1);
          value_ptr(x.a), value_ptr(x.b);
          break;
        case 4:
          x.kind = Instruction::JumpFalse;
          x.a = a.scalar<int32_t>(0);
          x.b = a.scalar<int32_t>(1);
          value_ptr(x.a);
          if (x.b < 0 || (uint64_t)x.b > ins.size()) throw_load("jump destination out of range");
          x.b += (int64_t)chain_start;
          break;
        case 5:
          x.kind = Instruction::Free;
          x.a = a.scalar<int32_t>(0);
          value_ptr(x.a);
          break;
        default:
          throw_load("instruction " + std::to_string(k) + " has an unknown kind " + std::to_string(ty));
      }
      x.chain = (int32_t)c;
      x.index = (int32_t)k;
      instructions_.push_back(std::move(x));
    }
  }
}

// State tensors without initial data (ExecuTorch 1.3.1 writes none for most registered buffers:
// they start as zeros) are known by what writes them back: the in-place copy_ / index_put_
// calls on a planned tensor that is neither a method input nor an output.
bool Method::is_io(const EValue* e) const {
  for (int64_t i : inputs_) if (&values_[(size_t)i] == e) return true;
  for (int64_t o : outputs_) if (&values_[(size_t)o] == e) return true;
  return false;
}

void Method::collect_state() {
  for (const Instruction& x : instructions_) {
    if (x.kind != Instruction::Kernel || x.args.empty() || !x.args[0]) continue;
    if (std::strcmp(x.op, "aten::copy_") != 0 && std::strcmp(x.op, "aten::index_put_") != 0) continue;
    const EValue* e = x.args[0];
    if (e < values_.data() || e >= values_.data() + values_.size() || e->tag != Tag::Tensor) continue;
    int64_t v = e - values_.data();
    if (e->t.is_constant || e->t.owns_external || !e->t.data || is_io(e)) continue;
    bool known = false;
    for (const State& st : state_) known = known || st.value == v;
    if (!known) state_.push_back(State{v, Span{}, std::string()});
  }
}

}  // namespace etnp
