import os

from setuptools import setup
from setuptools.command.build_ext import build_ext


class ParallelBuildExt(build_ext):
    """Compile the native core's many sources in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = int(os.environ.get("ETNP_BUILD_JOBS", os.cpu_count() or 1))


setup(cffi_modules=["build_ffi.py:ffibuilder"], cmdclass={"build_ext": ParallelBuildExt})
