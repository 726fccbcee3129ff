// Copies that move no byte, as views (runtime/copy_elision.cpp finds them): the kernels that make
// a copy's result view its input's bytes where the call's tensors allow it (declining - nothing
// viewed - elsewhere: the copy's own kernel then runs), and what the load-time analysis needs to
// know of each op.
#pragma once
#include <cstddef>

#include "kernels/ops/fused_chains.h"

namespace etnp {

struct Dims;

struct CopyView {
  const char* op;
  size_t nargs;  // (the out tensor twice at the end: the out argument and the result)
  int param;     // the op's parameter's argument (-1: none)
  // args: x, the parameter (or null), out, then the static views of out (planned tensors at its
  // bytes, null-terminated): out and they made views of x's bytes; false (nothing viewed) where
  // the call's tensors are not a relabelling. Out and its views have their planned bytes at entry.
  FusedFn view;
  // the result's shape where the copy leaves each element in place; false where it would move one
  // (or the op refuses its arguments)
  bool (*same_bytes)(KernelContext& ctx, EValue* const* args, Dims& shape);
  bool always;   // a relabelling whatever the shapes (view declines only what the op refuses)
};

// The copy op's entry (OP with NARGS arguments), or null.
const CopyView* copy_view_of(const char* op, size_t nargs);

}  // namespace etnp
