import hashlib
import os
import pathlib
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, ExecError


HERE = os.path.dirname(os.path.abspath(__file__))


def _make_deps(path):
    """The files a GCC/Clang dependency file (-MMD) names, or None when it is missing or unreadable."""
    try:
        with open(path) as fh:
            text = fh.read().replace("\\\n", " ")
    except OSError:
        return None
    _, _, deps = text.partition(": ")
    return deps.split()


def _is_native_source(path):
    """Whether PATH (a source or an include folder) belongs to the native core under native/."""
    return os.path.relpath(os.path.abspath(path), HERE).split(os.sep)[0] == "native"


def _up_to_date(obj, src, command):
    """Whether OBJ was built from SRC by COMMAND and no file it depends on changed since."""
    try:
        with open(obj + ".cmd") as fh:
            if fh.read() != command:
                return False
        built = os.path.getmtime(obj)
        deps = _make_deps(obj + ".d")
        return deps is not None and all(os.path.getmtime(d) <= built for d in [src] + deps)
    except OSError:
        return False


def _native_tree_digest(root):
    """SHA-256 over every source and header of the native core (paths and contents): with the compile
    command, the key of a shared object-cache entry (any edit anywhere in native/ misses the cache)."""
    digest = hashlib.sha256()
    base = os.path.join(root, "native")
    for folder, dirs, files in sorted(os.walk(base)):
        dirs.sort()
        for name in sorted(files):
            if os.path.splitext(name)[1] in (".h", ".hpp", ".c", ".cc", ".cpp", ".inc"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
                with open(path, "rb") as fh:
                    digest.update(hashlib.sha256(fh.read()).digest())
    return digest.hexdigest()


def _compiler_identity(argv):
    """The compiler's `--version` text: part of the object-cache key (another compiler misses)."""
    try:
        return subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None


class ObjectCache:
    """ETNP_OBJECT_CACHE=DIR: objects of the native core shared between builds in other folders or
    for other interpreters (CI's editable install, its sdist -> wheel build, its PyPy install), keyed
    by the compile command, the compiler's identity and the digest of the whole native/ tree. Off
    unless the variable is set; a miss or an unreadable entry just compiles."""

    def __init__(self, folder, root):
        self.folder = folder
        self.tree = _native_tree_digest(root)
        self.identities = {}
        os.makedirs(folder, exist_ok=True)

    def key(self, argv, command):
        compiler = tuple(argv)
        if compiler not in self.identities:
            self.identities[compiler] = _compiler_identity(list(argv))
        if self.identities[compiler] is None:
            return None
        text = "\0".join([self.identities[compiler], command, self.tree])
        return os.path.join(self.folder, hashlib.sha256(text.encode()).hexdigest())

    @staticmethod
    def fetch(key, obj):
        try:
            shutil.copyfile(key + ".o", obj + ".tmp")
            shutil.copyfile(key + ".d", obj + ".d")
            os.replace(obj + ".tmp", obj)
            return True
        except OSError:
            return False

    @staticmethod
    def store(key, obj):
        try:
            for src, dst in ((obj + ".d", key + ".d"), (obj, key + ".o")):  # the object last: it marks the entry whole
                shutil.copyfile(src, dst + ".%d.tmp" % os.getpid())
                os.replace(dst + ".%d.tmp" % os.getpid(), dst)
        except OSError:
            pass


class ParallelBuildExt(build_ext):
    """Compiles the native core's sources in parallel (ETNP_BUILD_JOBS, default: all CPUs), into a
    build folder that outlives the build (build/etnp-objects/), recompiling only the sources whose
    object is missing or older than the source or a header it includes (GCC/Clang dependency
    files), or was built by another command. So the README's second install, or a rebuild after
    editing one file, compiles only what changed. On Windows the compiler is clang-cl where one
    is found (windows_compiler), as distutils drives MSVC's cl.exe (no incremental build)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = int(os.environ.get("ETNP_BUILD_JOBS", os.cpu_count() or 1))
        tag = f"{sysconfig.get_platform()}-{platform.python_implementation()}-{sysconfig.get_python_version()}"
        self.build_temp = os.path.join(HERE, "build", "etnp-objects", tag)
        # distutils skips the whole extension when it is newer than its listed sources, which
        # misses edited headers and files added or edited during a build: always reach the
        # per-object check below (and relink), which knows every object's dependencies
        self.rebuild_all = self.force
        self.force = True

    def build_extensions(self):
        # PyPy's sysconfig has no LDCXXSHARED, which leaves distutils without a C++ linker.
        compiler = self.compiler
        if getattr(compiler, "linker_so_cxx", "") is None and getattr(compiler, "linker_so", None):
            cxx = (sysconfig.get_config_var("CXX") or "g++").split()[0]
            compiler.linker_so_cxx = [cxx] + list(compiler.linker_so[1:])
        if compiler.compiler_type == "unix":
            compiler.compile = self._incremental_compile
        if compiler.compiler_type == "msvc" and sysconfig.get_platform() == "win-amd64":
            use_clang_cl(compiler, self.extensions)
        super().build_extensions()

    def _incremental_compile(self, sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                             extra_preargs=None, extra_postargs=None, depends=None):
        compiler = self.compiler
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
        native_argv, native_args = self._native_command(compiler, include_dirs, extra_preargs)
        cache_dir = os.environ.get("ETNP_OBJECT_CACHE")
        cache = ObjectCache(cache_dir, HERE) if cache_dir else None
        todo = []
        for obj in objects:
            if obj not in build:
                continue
            src, ext = build[obj]
            native = native_argv is not None and _is_native_source(src)
            argv, args = (native_argv, native_args) if native else (compiler.compiler_so, cc_args)
            command = "\0".join(argv + args + [src] + list(extra_postargs))
            if not (self.rebuild_all or _up_to_date(obj, src, command)):
                key = cache.key(argv, command) if cache and _is_native_source(src) else None
                todo.append((obj, src, ext, argv, args, command, key))

        def one(job):
            obj, src, ext, argv, args, command, key = job
            for stale in (obj, obj + ".cmd"):
                if os.path.exists(stale):
                    os.remove(stale)
            if not (key and os.path.exists(key + ".o") and ObjectCache.fetch(key, obj)):
                deps = ["-MMD", "-MF", obj + ".d"]
                if argv is compiler.compiler_so:
                    compiler._compile(obj, src, ext, args, list(extra_postargs) + deps, pp_opts)
                else:  # the native core's own command (no shared compiler state changed: jobs run in threads)
                    try:
                        compiler.spawn(argv + args + [src, "-o", obj] + list(extra_postargs) + deps)
                    except ExecError as exc:
                        raise CompileError(exc)
                if key:
                    ObjectCache.store(key, obj)
            with open(obj + ".cmd", "w") as fh:
                fh.write(command)

        if todo:
            cached = f", shared object cache {cache.folder}" if cache else ""
            print(f"compiling {len(todo)} of {len(objects)} sources ({self.parallel} jobs{cached})", flush=True)
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max(1, int(self.parallel))) as pool:
            list(pool.map(one, todo))  # (re-raises the first compile error)
        return objects

    @staticmethod
    def _native_command(compiler, include_dirs, extra_preargs):
        """Linux: the native core (no Python headers) compiles with the same command whatever the
        interpreter - the compiler (CC), CPython's usual release flags (-DNDEBUG -fwrapv -Wall
        -Wsign-compare -fPIC: what a CPython build gave the core so far), the user's CFLAGS /
        CPPFLAGS and the core's own include folders - so that PyPy, other CPython versions and
        the wheel build share one object cache. None elsewhere (macOS's interpreter flags carry
        the target architectures and SDK; the interpreter's command is kept there)."""
        if not sys.platform.startswith("linux"):
            return None, None
        so = list(compiler.compiler_so)
        n = next((i for i, a in enumerate(so) if a.startswith("-")), len(so))
        argv = so[:n] + ["-DNDEBUG", "-fwrapv", "-Wall", "-Wsign-compare", "-fPIC"]
        argv += shlex.split(os.environ.get("CFLAGS", "")) + shlex.split(os.environ.get("CPPFLAGS", ""))
        includes = ["-I" + d for d in (include_dirs or []) if _is_native_source(d)]
        return argv, includes + ["-c"] + list(extra_preargs or [])


# clang-cl 19 is the first whose <immintrin.h> declares every intrinsic whatever the command line
# enables (older ones only those of /arch, which the run-time dispatched kernels must not assume).
CLANG_CL_MIN_MAJOR = 19
# Added to build_ffi.py's Windows flags under clang-cl: -O3 as the Linux build, no /GL (cl.exe's
# link-time code generation, which clang-cl ignores with a warning), quiet about unused parameters.
CLANG_CL_FLAGS = ["/clang:-O3", "-Wno-unused-parameter", "-Wno-unused-command-line-argument"]


def clang_cl_major(exe):
    """The major version of the clang-cl at EXE, or 0 when it does not run."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    m = re.search(r"clang version (\d+)", out)
    return int(m.group(1)) if m else 0


def clang_cl_candidates(cl_exe):
    """Where clang-cl may be: on PATH, LLVM's installer's folder, and Visual Studio's own copy
    (its "C++ Clang tools" component: VC/Tools/Llvm/x64/bin beside VC/Tools/MSVC/<v>/bin/Hostx64/x64/cl.exe)."""
    found = [shutil.which("clang-cl")]
    for root in (os.environ.get("ProgramFiles"), os.environ.get("ProgramW6432")):
        if root:
            found.append(os.path.join(root, "LLVM", "bin", "clang-cl.exe"))
    parents = pathlib.Path(cl_exe or ".").parents
    if len(parents) > 5:  # cl.exe's parents: x64, Hostx64, bin, <version>, MSVC, Tools
        found.append(str(parents[5] / "Llvm" / "x64" / "bin" / "clang-cl.exe"))
    return [f for f in dict.fromkeys(found) if f and os.path.isfile(f)]


def use_clang_cl(compiler, extensions):
    """Windows x86-64: compile with clang-cl (LLVM 19 or later) instead of cl.exe, so that the AVX2 /
    AVX-512 kernels - GCC-style target attributes under __x86_64__ - are compiled in and chosen at
    run time, as on Linux; a cl.exe build has the portable kernels only. Objects still link with
    MSVC's link.exe. ETNP_WINDOWS_COMPILER: unset or "auto" (clang-cl when one is found, else cl.exe
    with a warning), "clang-cl" (fail without one: the wheel workflow), "cl", or a clang-cl.exe path."""
    choice = os.environ.get("ETNP_WINDOWS_COMPILER", "auto")
    if choice == "cl":
        return
    if not compiler.initialized:
        compiler.initialize()
    candidates = [choice] if choice not in ("auto", "clang-cl") else clang_cl_candidates(compiler.cc)
    versions = {exe: clang_cl_major(exe) for exe in candidates}
    usable = [exe for exe, major in versions.items() if major >= CLANG_CL_MIN_MAJOR]
    if not usable:
        seen = ", ".join(f"{exe} ({major or 'does not run'})" for exe, major in versions.items()) or "none found"
        message = f"clang-cl {CLANG_CL_MIN_MAJOR} or later is needed for the AVX2 / AVX-512 kernels; clang-cl: {seen}"
        if choice != "auto":
            raise RuntimeError(message + " (ETNP_WINDOWS_COMPILER=" + choice + ")")
        print(f"warning: {message}. Building with cl.exe: the portable kernels only.", flush=True)
        return
    print(f"compiling with {usable[0]} (clang-cl {versions[usable[0]]})", flush=True)
    compiler.cc = usable[0]
    # distutils passes the Visual C++ environment's include folders (MSVC's STL and intrinsics
    # headers, the Windows SDK's) with /I, ahead of clang's own headers: MSVC's <immintrin.h>
    # would stand in for clang's. As INCLUDE they are clang-cl's system folders, searched after
    # its own, as in a Developer Command Prompt. (distutils keeps them on the class.)
    vc_include = list(getattr(type(compiler), "include_dirs", None) or [])
    if vc_include:
        type(compiler).include_dirs = []
        os.environ["INCLUDE"] = os.pathsep.join(vc_include)
    for name in ("compile_options", "compile_options_debug"):
        setattr(compiler, name, [o for o in getattr(compiler, name, []) if o != "/GL"])
    for ext in extensions:
        ext.extra_compile_args = list(ext.extra_compile_args or []) + CLANG_CL_FLAGS


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
