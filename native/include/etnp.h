/* etnp.h - the C API of executorch-numpy-runtime's native core.
 *
 * This is the ONLY declaration of the API: build_ffi.py derives the cffi cdef
 * from this file (preprocessor lines stripped), so keep it plain C: no macros
 * inside declarations, constants as enums.
 *
 * Every function that can fail returns an etnp_status; on failure the calling
 * thread's etnp_last_error_message() says what went wrong and
 * etnp_last_error_detail() names the missing operator / backend (or "").
 */
#ifndef ETNP_H
#define ETNP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum etnp_status {
  ETNP_OK = 0,
  ETNP_ERR_PROGRAM_LOAD = 1,          /* malformed / unsupported .pte */
  ETNP_ERR_BACKEND_NOT_AVAILABLE = 2, /* delegate id not linked */
  ETNP_ERR_OPERATOR_NOT_FOUND = 3,    /* kernel (or XNN node) not linked */
  ETNP_ERR_EXECUTION = 4,             /* bad inputs, kernel failure */
  ETNP_ERR_INVALID_ARGUMENT = 5,      /* API misuse (null handle, bad index) */
  ETNP_ERR_INTERNAL = 6,
  ETNP_ERR_CANCELLED = 7              /* a call stopped: cancelled, timed out, interrupted, instruction cap;
                                         the detail says which: cancel, timeout, interrupt, instructions */
};

/* etnp_program_load_file_ex flags */
enum etnp_load_flags {
  ETNP_LOAD_MMAP = 1  /* map the file instead of reading it: truncating or rewriting the file while the
                         program is loaded can then crash the process (SIGBUS) or change its results */
};

enum etnp_limits { ETNP_MAX_DIMS = 16 };

/* Value kinds (the EValue tags of program.fbs). */
enum etnp_kind {
  ETNP_KIND_NONE = 0,
  ETNP_KIND_INT = 1,
  ETNP_KIND_BOOL = 2,
  ETNP_KIND_DOUBLE = 3,
  ETNP_KIND_TENSOR = 4,
  ETNP_KIND_STRING = 5,
  ETNP_KIND_INT_LIST = 6,
  ETNP_KIND_DOUBLE_LIST = 7,
  ETNP_KIND_BOOL_LIST = 8,
  ETNP_KIND_TENSOR_LIST = 9,
  ETNP_KIND_OPTIONAL_TENSOR_LIST = 10
};

/* dtype codes are ExecuTorch's ScalarType numbers (scalar_type.fbs). */
enum etnp_dtype {
  ETNP_DTYPE_UINT8 = 0,
  ETNP_DTYPE_INT8 = 1,
  ETNP_DTYPE_INT16 = 2,
  ETNP_DTYPE_INT32 = 3,
  ETNP_DTYPE_INT64 = 4,
  ETNP_DTYPE_FLOAT16 = 5,
  ETNP_DTYPE_FLOAT32 = 6,
  ETNP_DTYPE_FLOAT64 = 7,
  ETNP_DTYPE_COMPLEX64 = 9,
  ETNP_DTYPE_COMPLEX128 = 10,
  ETNP_DTYPE_BOOL = 11,
  ETNP_DTYPE_BFLOAT16 = 15
};

typedef struct etnp_runtime etnp_runtime;
typedef struct etnp_program etnp_program;
typedef struct etnp_method etnp_method;
typedef struct etnp_result etnp_result;

/* Describes one method input/output, or one produced output value. */
typedef struct etnp_value_meta {
  int kind;                       /* etnp_kind */
  int dtype;                      /* etnp_dtype, tensors only */
  int ndim;
  int64_t sizes[16];              /* planned (upper-bound) sizes, or actual sizes of a result */
  int dynamic;                    /* 0 static, 1 dynamic (bounded), 2 dynamic (unbounded) */
  int64_t int_value;              /* INT / BOOL scalars */
  double double_value;            /* DOUBLE scalars */
  size_t nbytes;                  /* tensor data size in bytes */
  uint8_t dim_order[16];          /* tensors: the memory order of the dims (0, 1, ... when contiguous;
                                     0, 2, 3, 1 for channels-last). Inputs and outputs cross the API
                                     in logical row-major order whatever it is. */
} etnp_value_meta;

/* One input passed to etnp_method_run. For tensors, data must be C-contiguous
 * and stay valid for the duration of the call; it is not copied. */
typedef struct etnp_input {
  int kind;                       /* ETNP_KIND_TENSOR, _INT, _BOOL or _DOUBLE */
  int dtype;
  int ndim;
  const int64_t *sizes;
  const void *data;
  size_t nbytes;
  int64_t int_value;
  double double_value;
} etnp_input;

/* ---- errors (thread-local, valid until the thread's next failing call) ---- */
const char *etnp_last_error_message(void);
const char *etnp_last_error_detail(void);

/* ---- build / registry introspection ---- */
const char *etnp_version(void);
const char *etnp_et_version(void);
size_t etnp_num_operators(void);
const char *etnp_operator_name(size_t i);
size_t etnp_num_backends(void);
const char *etnp_backend_name(size_t i);
size_t etnp_num_kernel_libs(void);
const char *etnp_kernel_lib_name(size_t i);
const char *etnp_cpu_features(void);

/* ---- runtime ---- */
int etnp_runtime_create(int num_threads, etnp_runtime **out);  /* num_threads <= 0: physical cores */
void etnp_runtime_destroy(etnp_runtime *rt);
int etnp_runtime_num_threads(const etnp_runtime *rt);

/* ---- program ---- */
/* Reads the whole file into memory: later changes to the file do not affect the program. */
int etnp_program_load_file(etnp_runtime *rt, const char *path, etnp_program **out);
int etnp_program_load_file_ex(etnp_runtime *rt, const char *path, int flags, etnp_program **out);
int etnp_program_load_bytes(etnp_runtime *rt, const void *data, size_t size, etnp_program **out);
/* Adds an external data file (.ptd, FlatTensor) whose named tensors the program's methods
 * read (`external_constants=True` exports); the bytes are copied. Call before loading methods. */
int etnp_program_add_data(etnp_program *prog, const void *data, size_t size, const char *label);
/* Uses a packed-weight cache file at PATH for the methods loaded after (NULL or "" stops using
 * one): a method load finds its delegates' packed weights there (checked against the program,
 * the build and the CPU path) and maps them read-only instead of packing, shared by every process
 * that maps the file; or packs, then writes the file (a temporary renamed over PATH). A damaged,
 * stale or foreign file is a miss (rewritten); a file that cannot be written is no error. */
int etnp_program_set_weight_cache(etnp_program *prog, const char *path);
void etnp_program_destroy(etnp_program *prog);
size_t etnp_program_num_methods(const etnp_program *prog);
const char *etnp_program_method_name(const etnp_program *prog, size_t i);
/* Operators / delegates used by one method (for coverage tools); no kernels needed. */
int etnp_program_method_ops(const etnp_program *prog, const char *method, size_t i, const char **name);
int etnp_program_method_delegates(const etnp_program *prog, const char *method, size_t i, const char **id);
/* A method's signature as its plan declares it, without loading the method: the number of
 * inputs (output = 0) or outputs (output = 1), and the i-th one's kind, dtype, sizes (upper
 * bounds when dynamic) and dynamism; nbytes and values are 0. */
int etnp_program_method_num_io(const etnp_program *prog, const char *method, int output, size_t *count);
int etnp_program_method_io_meta(const etnp_program *prog, const char *method, int output, size_t i,
                                etnp_value_meta *out);

/* The container metadata of a method (ContainerMetadata in program.fbs): the pytree spec of its
 * inputs (output = 0: encoded_inp_str) or outputs (output = 1: encoded_out_str) as the exporter
 * wrote it (JSON), or "" when absent. Valid until the thread's next call of this function. */
int etnp_program_method_container_meta(const etnp_program *prog, const char *method, int output, const char **str);
/* The program file's bytes as loaded (owned copy or mapping), valid while PROG lives; bytes given back
 * after packing (etnp_method_load) are read back from the file first (ETNP_ERR_PROGRAM_LOAD if it changed). */
int etnp_program_data(const etnp_program *prog, const void **data, size_t *size);

/* ---- method ---- */
int etnp_method_load(etnp_program *prog, const char *name, etnp_method **out);
void etnp_method_destroy(etnp_method *m);
/* State: the method's mutable tensors (buffers its program updates, e.g. KV caches), which
 * keep their contents across calls. reset puts them back to the program's initial data. */
int etnp_method_reset(etnp_method *m);
size_t etnp_method_num_state(const etnp_method *m);
/* The i-th state tensor's dtype and shape, and its name ("" when the program gives none). */
int etnp_method_state_meta(const etnp_method *m, size_t i, etnp_value_meta *out, const char **name);
size_t etnp_method_num_inputs(const etnp_method *m);
size_t etnp_method_num_outputs(const etnp_method *m);
int etnp_method_input_meta(const etnp_method *m, size_t i, etnp_value_meta *out);
int etnp_method_output_meta(const etnp_method *m, size_t i, etnp_value_meta *out);
/* Binds inputs, executes, and copies every output into a new result.
 * Serialised per runtime (the runtime's mutex is held for the whole call). */
int etnp_method_run(etnp_method *m, const etnp_input *inputs, size_t num_inputs, etnp_result **out);
/* The same, copying each output (all must be tensors) straight into out_data[i], whose size
 * must be exactly out_nbytes[i] (else ETNP_ERR_INVALID_ARGUMENT, after the run): one call and
 * no result object, for callers that know the output sizes (static shapes). */
int etnp_method_run_into(etnp_method *m, const etnp_input *inputs, size_t num_inputs, void *const *out_data,
                         const size_t *out_nbytes, size_t num_outputs);

/* Limits of the following calls of M: a timeout in seconds (0: none) and whether a SIGINT during a
 * call stops it (needs etnp_install_interrupt_handler). Every call also stops after 10^7 instructions.
 * A stopped call fails with ETNP_ERR_CANCELLED. */
int etnp_method_set_run_limits(etnp_method *m, double timeout_s, int interruptible);
/* Stops the call of M in progress (from any thread) at its next instruction; no effect when idle. */
void etnp_method_cancel(etnp_method *m);
/* Installs (once) a SIGINT handler that counts interrupts, then calls the handler it replaced. */
int etnp_install_interrupt_handler(void);
/* SIGINTs counted from now on stop M's next call (when interruptible): a caller marks just before
 * it prepares the call, so an interrupt that arrives meanwhile is not lost (without a mark, the
 * call counts from its own start). */
void etnp_method_mark_interrupts(etnp_method *m);
/* etnp_install_interrupt_handler, then etnp_method_mark_interrupts(M) (also when the install fails,
 * whose status it returns): one call for a caller on the thread that receives SIGINT. */
int etnp_method_watch_interrupts(etnp_method *m);

/* ---- profiling ----
 * With profiling on, each call of M records one event per kernel or delegate instruction (depth 0)
 * and, inside XNNPACK delegate calls, one per node (depth 1; name with what was fused into it,
 * e.g. "XNNConv2d+Add", and the node's output shape). The events of a call replace the previous
 * call's. Off (the default) it costs one pointer test per instruction. */
typedef struct etnp_profile_event {
  const char *name;     /* operator, delegate id or XNNPACK node; valid until M's next call (read the
                           events of a call before another thread can call M again) */
  const char *shape;    /* a node's output shape ("1x32x112x112"), or "" */
  int64_t start_ns;     /* from the start of the call */
  int64_t duration_ns;
  int instruction;      /* the instruction index (a node's: its delegate call's) */
  int depth;            /* 0: instruction, 1: a node inside a delegate call */
  int node;             /* the node index inside its delegate, -1 for instructions */
  int chain;            /* the program's chain of the instruction (0 in exported programs) */
  int chain_instruction; /* the instruction's index in its chain: ExecuTorch's instruction id, which
                           an ETRecord's debug handle map is keyed by */
} etnp_profile_event;
/* Where a loaded method's memory is (bytes): what a footprint report shows. program_bytes: the
 * program file's bytes the program holds (its copy or mapping, less the pages it gave back after
 * packing; a mapping's untouched pages count too); data_file_bytes: its .ptd copies; planned: the method's memory-planned buffers;
 * folded: constant copies folded at load; packed_weights: the delegates' packed / prepared
 * weights; constants: the delegates' decoded constant tensors; values: the delegates' buffers of
 * inputs, intermediates and outputs (mostly the runtime's buffer bank, which all delegates of all
 * methods on the runtime borrow from during their calls); scratch: the delegates' reusable
 * scratch buffers. */
typedef struct {
  uint64_t program_bytes;
  uint64_t data_file_bytes;
  uint64_t planned;
  uint64_t folded;
  uint64_t packed_weights;
  uint64_t constants;
  uint64_t values;
  uint64_t scratch;
  uint64_t mapped_weights; /* packed weights and constants viewed in a weight cache file's shared read-only mapping */
} etnp_memory_stats;
int etnp_method_memory_stats(const etnp_method *m, etnp_memory_stats *out);

int etnp_method_set_profiling(etnp_method *m, int enabled);
size_t etnp_method_num_profile_events(const etnp_method *m);
int etnp_method_profile_event(const etnp_method *m, size_t i, etnp_profile_event *out);

/* Intermediate outputs (ETDump debug events). With profiling on, each call also copies, after
 * chosen instructions run, what ExecuTorch's event tracer logs for them: a kernel call's output (its
 * last argument; each tensor of a multi-output op's list), every argument of a delegate call (its
 * inputs, then its outputs). mode 0: none (the default),
 * 1: every kernel and delegate instruction, 2: the n instructions listed (indices as in
 * etnp_profile_event.instruction). Turning profiling off (or on again) forgets the choice. */
int etnp_method_set_debug_capture(etnp_method *m, int mode, const int32_t *instructions, size_t n);
typedef struct etnp_debug_value {
  int instruction;      /* the instruction index (as etnp_profile_event.instruction) */
  int item;             /* the tensor's index in a list output, or a delegate call's argument index */
  int kind;             /* ETNP_KIND_TENSOR, _INT, _BOOL, _DOUBLE, or _NONE (a value not recorded) */
  int dtype;
  int ndim;
  int64_t sizes[16];
  int64_t int_value;
  double double_value;
  size_t nbytes;        /* a tensor's data size */
} etnp_debug_value;
/* The values the last profiled call captured, in the order their instructions ran. */
size_t etnp_method_num_debug_values(const etnp_method *m);
/* The i-th value's description, and when data is not NULL its elements in logical (row-major)
 * order, copied to data (nbytes must be the value's nbytes). */
int etnp_method_debug_value(const etnp_method *m, size_t i, etnp_debug_value *out, void *data, size_t nbytes);

/* ---- result ---- */
size_t etnp_result_num_outputs(const etnp_result *r);
int etnp_result_output_meta(const etnp_result *r, size_t i, etnp_value_meta *out);
int etnp_result_copy_output(const etnp_result *r, size_t i, void *dst, size_t nbytes);
void etnp_result_destroy(etnp_result *r);

/* ---- operators defined by the caller (callback kernels; Python's en.register_op) ----
 * A program's call to NAME that no native kernel implements is routed to the callback
 * registered under NAME (resolved at method load). The callback gets the call's arguments
 * in schema order (a .out variant's trailing return values, which repeat the out tensors,
 * are dropped) and returns 0, or nonzero after etnp_op_fail. Tensors are contiguous views of
 * runtime memory, valid only during the call. It runs on the thread calling etnp_method_run,
 * with that runtime's mutex held: it must not run methods of the same runtime. */
typedef struct etnp_op_arg {
  int kind;                      /* ETNP_KIND_* */
  int64_t i;                     /* INT, BOOL */
  double d;                      /* DOUBLE */
  int dtype;                     /* TENSOR */
  int ndim;
  const int64_t *sizes;
  void *data;
  size_t nbytes;
  size_t capacity;               /* TENSOR: bytes the tensor may grow to (etnp_op_resize) */
  const int64_t *ints;           /* INT_LIST */
  const double *doubles;         /* DOUBLE_LIST */
  const char *str;               /* STRING */
  size_t len;                    /* list / string length */
} etnp_op_arg;
typedef struct etnp_op_call etnp_op_call;
typedef int (*etnp_op_fn)(void *user, etnp_op_call *call, etnp_op_arg *args, size_t nargs);
/* Registers (or replaces) the callback for NAME; a name with a native kernel is refused. */
int etnp_register_op(const char *name, etnp_op_fn fn, void *user);
int etnp_unregister_op(const char *name);
size_t etnp_num_registered_ops(void);
/* Resizes tensor argument ARG within its planned capacity; updates args[ARG]. */
int etnp_op_resize(etnp_op_call *call, size_t arg, int ndim, const int64_t *sizes);
void etnp_op_fail(etnp_op_call *call, const char *message);

#ifdef __cplusplus
}
#endif
#endif /* ETNP_H */
