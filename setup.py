"""Builds habana_dataloader with CMake: the hdl library and the _C extension.

The package lands in the wheel as python/habana_dataloader/*.py, _C*.so and libhdl.so.0
(found through _C's RPATH $ORIGIN). CMake runs in _build-pip/ (set CMAKE_ARGS for extra
options, HDL_BUILD_JOBS for parallelism).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = ROOT / "_build-pip" / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build_dir), *gen,
                               "-DCMAKE_BUILD_TYPE=Release", "-DHDL_BUILD_TESTS=OFF",
                               "-DHDL_BUILD_SAMPLES=OFF", "-DHDL_BUILD_PYTHON=ON",
                               f"-DPython3_EXECUTABLE={sys.executable}",
                               *os.environ.get("CMAKE_ARGS", "").split()])
        jobs = os.environ.get("HDL_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_C", "-j", jobs])
        out_dir = Path(self.get_ext_fullpath(ext.name)).parent
        out_dir.mkdir(parents=True, exist_ok=True)
        pkg = build_dir / "python" / "habana_dataloader"
        for f in pkg.iterdir():
            if f.name.startswith("_C") and f.suffix == ".so":
                shutil.copy2(f, out_dir / f.name)
        lib = build_dir / "libhdl.so.0"
        shutil.copy2(lib.resolve(), out_dir / "libhdl.so.0")


setup(
    packages=["habana_dataloader"],
    package_dir={"": "python"},
    package_data={"habana_dataloader": ["README.md"]},
    ext_modules=[Extension("habana_dataloader._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "_build-pip"}},
    zip_safe=False,
)
