import os
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


setup(cffi_modules=["build_ffi.py:ffibuilder"], cmdclass={"build_ext": ParallelBuildExt})
