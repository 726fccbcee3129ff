"""Out-of-process executor: runs .pte programs with `executorch_numpy_runtime` for the pytest plugin.

Run as `PYTHON worker.py` where PYTHON has `executorch_numpy_runtime` (ours, or the reference
build wrapping upstream ExecuTorch). It never imports torch. It reads requests on stdin and
writes replies on the original stdout (see protocol.py); anything printed by Python or native
code goes to stderr, which the plugin sends to a log file.

Request header: {"op": "run", "method": str, "pte_sha": str, "cl_input": mode, "inputs": [spec]}
followed by the .pte bytes (empty: reuse the last program with that sha) and an npz of the
tensor inputs (a0, a1, ... in order of the tensor specs). A tensor spec is
{"kind": "tensor", "shape": logical, "dim_order": [...], "bf16": bool}; its array holds the
data in physical order (the logical tensor permuted by dim_order, C-contiguous), bf16 as uint16
bits. Scalars are {"kind": "scalar", "value": v}; None is {"kind": "none"}.

How an input with a non-default dim order reaches the runtime (cl_input):
  bytes    an array of the logical shape, C-contiguous, whose bytes are in the program's dim
           order (upstream ExecuTorch semantics: the reference runtime copies the buffer as is);
  strided  a numpy view of the logical shape whose strides express the dim order
           (the natural numpy form of a channels-last tensor);
  logical  a C-contiguous copy of the logical values (loses the layout).
"""

import hashlib
import os
import sys
import traceback

import numpy as np

import protocol


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def build_input(spec, phys, mode):
    """The object passed to the runtime for one tensor input (see the module doc)."""
    shape, order = tuple(spec["shape"]), list(spec["dim_order"])
    if order == list(range(len(order))):
        return phys.reshape(shape)
    if mode == "bytes":
        return np.ascontiguousarray(phys).reshape(shape)
    view = phys.transpose(_inverse(order))
    if mode == "strided":
        return view
    if mode == "logical":
        return np.ascontiguousarray(view)
    raise ValueError(f"unknown cl_input mode {mode!r}")


def encode_outputs(outs):
    """(output specs, arrays) of a method's results, bf16 as uint16 bits."""
    specs, arrays = [], []
    for o in outs:
        if o is None:
            specs.append({"kind": "none"})
        elif isinstance(o, (bool, int, float)) and not isinstance(o, np.generic):
            specs.append({"kind": "scalar", "value": o, "type": type(o).__name__})
        else:
            a = np.asarray(o)
            bf16 = a.dtype.name == "bfloat16"
            if bf16:
                a = a.view(np.uint16)
            specs.append(
                {
                    "kind": "tensor",
                    "dtype": a.dtype.str,
                    "bf16": bf16,
                    "shape": list(a.shape),
                    "c_contiguous": bool(a.flags.c_contiguous),
                    "strides": list(a.strides),
                    "ndarray": isinstance(o, np.ndarray),
                }
            )
            arrays.append(a)
    return specs, arrays


def make_runtime(en):
    threads = os.environ.get("ETC_THREADS", "")
    if threads:
        try:
            return en.Runtime(num_threads=int(threads))
        except TypeError:  # the reference wrapper takes no thread count
            pass
    return en.Runtime.get()


def main():
    reply_out = os.fdopen(os.dup(1), "wb")  # protocol channel; fd 1 then points at stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer

    def send(header, *payloads):
        reply_out.write(protocol.encode(header, *payloads))
        reply_out.flush()

    import executorch_numpy_runtime as en

    runtime = make_runtime(en)
    send(
        {
            "ready": True,
            "module": getattr(en, "__file__", "?"),
            "version": str(getattr(en, "__version__", "?")),
            "python": sys.version.split()[0],
        }
    )
    last_sha, last_pte = None, None
    while True:
        try:
            header, (pte, npz) = protocol.read_message(requests, 2)
        except EOFError:
            return
        if header.get("op") == "quit":
            return
        try:
            if pte:
                last_sha, last_pte = hashlib.sha256(pte).hexdigest(), pte
            if header["pte_sha"] != last_sha:
                raise RuntimeError("worker has no program with that sha (protocol error)")
            specs = header["inputs"]
            tensors = protocol.npz_to_arrays(npz, sum(s["kind"] == "tensor" for s in specs))
            inputs, k = [], 0
            for s in specs:
                if s["kind"] == "tensor":
                    inputs.append(build_input(s, tensors[k], header.get("cl_input", "bytes")))
                    k += 1
                else:
                    inputs.append(s.get("value"))
            program = runtime.load_program(last_pte)
            method = program.load_method(header.get("method", "forward"))
            outs = method(inputs)
            out_specs, arrays = encode_outputs(outs)
            del method, program
            send({"ok": True, "outputs": out_specs}, protocol.arrays_to_npz(arrays))
        except Exception as e:  # every failure goes back to the test as an error reply
            send(
                {
                    "ok": False,
                    "error_type": type(e).__name__,
                    "message": str(e),
                    "traceback": traceback.format_exc(),
                },
                b"",
            )


if __name__ == "__main__":
    main()
