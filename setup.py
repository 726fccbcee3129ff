import os
import platform
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext


class ParallelBuildExt(build_ext):
    """Compile the native core's many sources in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = int(os.environ.get("ETNP_BUILD_JOBS", os.cpu_count() or 1))

    def build_extensions(self):
        # PyPy's sysconfig has no LDCXXSHARED, which leaves distutils without a C++ linker.
        compiler = self.compiler
        if getattr(compiler, "linker_so_cxx", "") is None and getattr(compiler, "linker_so", None):
            cxx = (sysconfig.get_config_var("CXX") or "g++").split()[0]
            compiler.linker_so_cxx = [cxx] + list(compiler.linker_so[1:])
        super().build_extensions()


def limited_api_tag():
    """'cp39' where the extension is built against the limited API (cffi does so on CPython
    unless the interpreter is a debug or free-threaded build), so the wheel is tagged
    cp39-abi3 and one wheel serves CPython 3.9 and later; None elsewhere (PyPy keeps its
    own pp tag)."""
    if platform.python_implementation() != "CPython":
        return None
    if sysconfig.get_config_var("Py_GIL_DISABLED") or sysconfig.get_config_var("Py_DEBUG"):
        return None
    return "cp39"


options = {}
if limited_api_tag():
    options["bdist_wheel"] = {"py_limited_api": limited_api_tag()}

setup(cffi_modules=["build_ffi.py:ffibuilder"], cmdclass={"build_ext": ParallelBuildExt}, options=options)
