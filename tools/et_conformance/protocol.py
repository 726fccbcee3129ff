"""Length-prefixed frames over pipes, shared by the pytest side and the worker.

A message is a list of frames; each frame is an 8-byte little-endian length then the bytes.
The first frame of every message is UTF-8 JSON (the header); the rest are raw payloads
(the .pte bytes, npz archives). Only the standard library and numpy are used here, so
the worker can import this module under any interpreter that has numpy.
"""

import io
import json
import struct

import numpy as np

_LEN = struct.Struct("<Q")


def encode(header, *payloads):
    """Bytes of one message: the JSON header frame, then each payload frame."""
    parts = []
    for frame in (json.dumps(header).encode("utf-8"),) + tuple(payloads):
        parts.append(_LEN.pack(len(frame)))
        parts.append(bytes(frame))
    return b"".join(parts)


def read_exact(stream, n):
    """Read exactly n bytes from a blocking binary stream; EOFError on a short read."""
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            raise EOFError(f"stream closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(stream, n_payloads):
    """(header, [payload bytes...]) from a blocking binary stream."""
    frames = []
    for _ in range(1 + n_payloads):
        (size,) = _LEN.unpack(read_exact(stream, _LEN.size))
        frames.append(read_exact(stream, size))
    return json.loads(frames[0].decode("utf-8")), frames[1:]


def split_frames(buf, n_frames):
    """Parse n_frames frames from the start of buf; None if buf is still too short."""
    frames, pos = [], 0
    for _ in range(n_frames):
        if len(buf) < pos + _LEN.size:
            return None
        (size,) = _LEN.unpack_from(buf, pos)
        pos += _LEN.size
        if len(buf) < pos + size:
            return None
        frames.append(bytes(buf[pos : pos + size]))
        pos += size
    return frames


def arrays_to_npz(arrays):
    """npz bytes of a list of numpy arrays, stored as a0, a1, ... (no pickling)."""
    bio = io.BytesIO()
    np.savez(bio, **{f"a{i}": np.asarray(a) for i, a in enumerate(arrays)})
    return bio.getvalue()


def npz_to_arrays(data, count):
    """The count arrays a0..a{count-1} of npz bytes, in order."""
    if count == 0:
        return []
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return [z[f"a{i}"] for i in range(count)]
