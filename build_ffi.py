"""cffi build script (API mode, out-of-line) for executorch_numpy_runtime._etnp.

The cdef is derived from native/include/etnp.h - the single declaration of the C API -
by stripping comments, preprocessor lines and the C++ linkage wrapper. The C++17 core
under native/src is compiled into the same extension.
"""
import glob
import os
import re
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join("native", "include", "etnp.h")


def cdef_from_header(path):
    with open(path) as fh:
        text = fh.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#") or s in ('extern "C" {', "}"):
            continue
        out.append(line)
    return "\n".join(out)


def native_sources():
    srcs = sorted(glob.glob(os.path.join("native", "src", "**", "*.cpp"), recursive=True))
    return srcs


def compiler_options():
    """(compile flags, link libraries) for the platform's default compiler: MSVC on Windows,
    Clang with libc++ on macOS, GCC or Clang with libstdc++ elsewhere."""
    if sys.platform == "win32":
        # /Zc:__cplusplus: report C++17 in __cplusplus; NOMINMAX: <windows.h> without min/max macros
        return ["/std:c++17", "/O2", "/EHsc", "/Zc:__cplusplus", "/DNOMINMAX", "/wd4068", "/wd4996"], []
    flags = ["-std=c++17", "-O3", "-g0", "-fvisibility=hidden", "-Wno-unused-parameter"]
    if sys.platform == "darwin":
        return flags, ["c++", "m"]
    return flags, ["stdc++", "m", "pthread"]


COMPILE_ARGS, LIBRARIES = compiler_options()

ffibuilder = FFI()
ffibuilder.cdef(cdef_from_header(os.path.join(HERE, HEADER)))
ffibuilder.set_source(
    "executorch_numpy_runtime._etnp",
    '#include "etnp.h"',
    sources=native_sources(),
    include_dirs=[os.path.join("native", "include"), os.path.join("native", "src")],
    extra_compile_args=COMPILE_ARGS,
    libraries=LIBRARIES,
    source_extension=".cpp",
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
