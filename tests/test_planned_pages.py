"""Planned memory is resident only where written (issue #32): a method's large planned buffers are
pages the OS provides when first written, an all-zero initial state (a KV cache) is neither copied
into them nor kept in the program's bytes, and reset gives the pages back - each of N worker
processes holding a long KV cache pays for the positions it used, not for the whole cache."""
import gc
import sys

import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import F32, Program

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resident pages read from /proc (Linux)")

H, D = 8, 64  # a cache row: 2 KiB


def rss_bytes():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def cache_program(positions, init=None, return_cache=False):
    """forward(value [1, S, H, D], start_pos) -> llama::update_cache into a [1, positions, H, D] float32
    state tensor (a mutable buffer whose initial data is INIT, zeros if None)."""
    p = Program()
    nbytes = positions * H * D * 4
    val = p.tensor(F32, [1, 4, H, D], planned=True)
    cache = p.tensor(F32, [1, positions, H, D], mutable=bytes(nbytes) if init is None else init.tobytes())
    pos = p.int(0)
    o = p.tensor(F32, [1], planned=True)
    p.call(p.op("llama::update_cache", "out"), [val, cache, pos, o, o])
    p.inputs = [val, pos]
    p.outputs = [cache if return_cache else o]
    return p.to_bytes()


@linux
@pytest.mark.parametrize("use_mmap", [False, True])
def test_a_large_zero_state_costs_only_the_pages_written(tmp_path, use_mmap):
    positions = 32768
    nbytes = positions * H * D * 4  # 64 MiB of KV cache, all zeros in the file
    path = tmp_path / "cache.pte"
    path.write_bytes(cache_program(positions))
    rt = en.Runtime(num_threads=1)
    gc.collect()  # (PyPy frees the program's 64 MiB bytes object late: not during the calls below)
    before = rss_bytes()
    prog = rt.load_program(str(path), mmap=use_mmap)
    m = prog.load_method("forward")
    loaded = rss_bytes() - before
    # Neither the planned buffer (64 MiB of zeros) nor the file's zero initial data stays resident:
    # what remains is the program's small tables and the method's bookkeeping (< 8 MiB here).
    assert loaded < nbytes // 8, (loaded, m.memory_stats())
    rows = np.ones((1, 4, H, D), np.float32)
    for start in (0, positions // 2, positions - 4):  # 3 calls x 4 rows: a few pages each
        m([rows, start])
    after_calls = rss_bytes()
    written = after_calls - before
    assert written < nbytes // 8, written
    # a write to every position makes the whole cache resident (the bound above is not vacuous);
    # counted from after the load: the load ends by giving the C library's free heap back to the OS
    # (os::trim_heap), which can take RSS below `before` by memory that is not the cache's (under
    # PyPy, tens of MB its freed objects had left)
    for start in range(0, positions, 4):
        m([rows, start])
    assert rss_bytes() - after_calls > nbytes * 3 // 4
    m.reset()  # back to zeros: the pages are given back
    assert rss_bytes() - before < nbytes // 8


def test_initial_state_is_copied_exactly_and_restored_by_reset():
    # pages of initial data that are zero stay unwritten, the others are copied: both read back
    positions = 64  # 128 KiB: a heap block, not mapped pages - the copy rule is the same
    init = np.zeros((1, positions, H, D), np.float32)
    init[0, 1] = 1.5
    init[0, 40:42] = np.arange(2 * H * D, dtype=np.float32).reshape(2, H, D)
    m = en.Runtime.get().load_program(cache_program(positions, init, return_cache=True)).load_method("forward")
    rows = np.full((1, 4, H, D), -2.0, np.float32)
    want = init.copy()
    want[0, 8:12] = rows[0]
    np.testing.assert_array_equal(m([rows, 8])[0], want)
    m.reset()
    want = init.copy()
    want[0, 20:24] = rows[0]
    np.testing.assert_array_equal(m([rows, 20])[0], want)


def test_a_large_initial_state_with_data_reads_back_after_reset(tmp_path):
    positions = 4096  # 8 MiB: mapped pages
    init = np.zeros((1, positions, H, D), np.float32)
    init[0, ::97] = 3.25  # a non-zero row every 97 positions: some pages copied, most not
    path = tmp_path / "init.pte"
    path.write_bytes(cache_program(positions, init, return_cache=True))
    m = en.Runtime.get().load_program(str(path)).load_method("forward")
    rows = np.full((1, 4, H, D), 7.0, np.float32)
    out = m([rows, 100])[0]
    want = init.copy()
    want[0, 100:104] = rows[0]
    np.testing.assert_array_equal(out, want)
    m.reset()
    want = init.copy()
    want[0, 0:4] = rows[0]
    np.testing.assert_array_equal(m([rows, 0])[0], want)
