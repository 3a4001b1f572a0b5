"""Arch lists, generated CUDA/ROCm flags and ninja text (pure functions: no compiler is run)."""
import os
import stat
from pathlib import Path

import pytest

from aiter_lite.jit import read_env, load_registry
from aiter_lite.jit.env import parse_bool
from aiter_lite.jit.ninja import generate_ninja, default_jobs
from aiter_lite.jit.spec import make_spec
from aiter_lite.jit.toolchain import parse_cuda_arch_list, parse_rocm_arch_list, target_archs


def test_cuda_arch_lists():
    assert parse_cuda_arch_list("sm_90a, sm_80") == ("sm_80", "sm_90a")
    assert parse_cuda_arch_list("8.0;9.0a+PTX 8.6") == ("sm_80", "sm_86", "sm_90a")
    with pytest.raises(ValueError, match="invalid CUDA arch 'ampere'"):
        parse_cuda_arch_list("ampere")


def test_rocm_arch_lists():
    assert parse_rocm_arch_list("gfx942;gfx90a:xnack-") == ("gfx90a", "gfx942")
    with pytest.raises(ValueError, match="invalid ROCm arch"):
        parse_rocm_arch_list("sm_90")


def test_arch_env_precedence():
    env = read_env({"AITER_LITE_ARCH": "sm_90a", "TORCH_CUDA_ARCH_LIST": "8.0"})
    assert target_archs("cuda", env) == ("sm_90a",)
    env = read_env({"TORCH_CUDA_ARCH_LIST": "8.0;8.6"})
    assert target_archs("cuda", env) == ("sm_80", "sm_86")
    assert target_archs("hip", read_env({"PYTORCH_ROCM_ARCH": "gfx942"})) == ("gfx942",)
    assert target_archs("cpu", read_env({})) == ()


def test_env_parsing_is_strict():
    assert parse_bool("X", "0") is False and parse_bool("X", "1") is True and parse_bool("X", None) is False
    with pytest.raises(ValueError, match="AITER_LITE_REBUILD='maybe'"):
        read_env({"AITER_LITE_REBUILD": "maybe"})
    with pytest.raises(ValueError, match="MAX_JOBS='-2'"):
        read_env({"MAX_JOBS": "-2"})
    assert read_env({"MAX_JOBS": "3"}).max_jobs == 3


def test_default_jobs():
    assert default_jobs(5, "cuda") == 5
    assert 1 <= default_jobs(None, "cuda") <= (os.cpu_count() or 1)


def _fake_compiler(dirpath: Path, name: str, version: str) -> Path:
    path = dirpath / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _registry(tmp_path):
    (tmp_path / "k.cu").write_text("// kernel\n")
    (tmp_path / "hopper.cu").write_text("// sm_90a only\n")
    (tmp_path / "b.cpp").write_text("// binding\n")
    (tmp_path / "reg.json").write_text("""{"modules": {"module_k": {
        "sources": {"hip": ["b.cpp", "k.cu"],
                    "cuda": ["b.cpp", "k.cu", {"path": "hopper.cu", "archs": ["sm_90a"]}]},
        "flags": {"hipcc": ["-O3"], "nvcc": ["-O3"], "ld": ["-fopenmp"]}}}}""")
    return load_registry([tmp_path / "reg.json"], tmp_path)


def test_rocm_flags(tmp_path):
    _fake_compiler(tmp_path / "rocm", "hipcc", "HIP version: 6.2.41133")
    env = read_env({"ROCM_PATH": str(tmp_path / "rocm"), "AITER_LITE_ARCH": "gfx942;gfx90a"})
    spec = make_spec(_registry(tmp_path).get("module_k"), "hip", env)
    assert spec.device_compiler.version == "HIP version: 6.2.41133"
    cu = [u for u in spec.units if u.source.name == "k.cu"][0]
    assert cu.compiler == "device" and cu.arch_flags == ("--offload-arch=gfx90a", "--offload-arch=gfx942")
    for flag in ("-x", "hip", "-fPIC", "-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1", "-O3",
                 "-DAITER_LITE_BACKEND_HIP=1"):
        assert flag in spec.device_flags, flag
    assert spec.linker == spec.device_compiler  # hipcc links the HIP runtime
    text = generate_ninja(spec, "module_k.abc.so", "module_k_hip_abc")
    assert "-DAITER_LITE_MODULE_NAME=module_k_hip_abc" in text  # the artifact's own name, not in the key
    assert "--offload-arch=gfx942" in text and "rule device" in text and "-MMD -MF $out.d" in text


def test_cuda_flags_and_arch_restricted_sources(tmp_path):
    _fake_compiler(tmp_path / "cuda", "nvcc", "Cuda compilation tools, release 13.0")
    reg = _registry(tmp_path)
    env = read_env({"CUDA_HOME": str(tmp_path / "cuda"), "AITER_LITE_ARCH": "sm_80,sm_90a"})
    spec = make_spec(reg.get("module_k"), "cuda", env)
    units = {u.source.name: u for u in spec.units}
    assert units["k.cu"].arch_flags == ("-gencode=arch=compute_80,code=sm_80",
                                        "-gencode=arch=compute_90a,code=sm_90a")
    assert units["hopper.cu"].arch_flags == ("-gencode=arch=compute_90a,code=sm_90a",)
    assert "-DAITER_LITE_HAS_HOPPER=1" in spec.device_flags
    assert "-Xcompiler=-fopenmp" in spec.link_flags
    # Without a Hopper target, the Hopper-only source is left out and its define is absent.
    spec80 = make_spec(reg.get("module_k"), "cuda", read_env({"CUDA_HOME": str(tmp_path / "cuda"),
                                                               "AITER_LITE_ARCH": "sm_80"}))
    assert "hopper.cu" not in {u.source.name for u in spec80.units}
    assert "-DAITER_LITE_HAS_HOPPER=1" not in spec80.device_flags
    text = generate_ninja(spec, "module_k.abc.so", "module_k_cuda_abc")
    assert "--generate-dependencies-with-compile" in text and "build module_k.abc.so: link" in text


def test_missing_compiler_names_the_variable(tmp_path):
    from aiter_lite.jit import BuildError

    env = read_env({"ROCM_PATH": str(tmp_path / "none"), "AITER_LITE_ARCH": "gfx942", "PATH": ""})
    if Path("/opt/rocm/bin/hipcc").exists():
        pytest.skip("a real hipcc is installed")
    import shutil as _sh
    if _sh.which("hipcc"):
        pytest.skip("hipcc on PATH")
    with pytest.raises(BuildError, match="hipcc not found(.|\n)*ROCM_PATH"):
        make_spec(_registry(tmp_path).get("module_k"), "hip", env)


def test_device_compiles_spread_over_idle_cores_outside_the_key(tmp_path):
    from aiter_lite.jit.key import compute_key
    from aiter_lite.jit.ninja import device_threads

    _fake_compiler(tmp_path / "cuda", "nvcc", "Cuda compilation tools, release 13.0")
    env = read_env({"CUDA_HOME": str(tmp_path / "cuda"), "AITER_LITE_ARCH": "sm_80,sm_90a"})
    spec = make_spec(_registry(tmp_path).get("module_k"), "cuda", env)  # 2 device files
    assert device_threads(spec, 16) == 8 and device_threads(spec, 3) == 3 and device_threads(spec, 1) == 1
    text = generate_ninja(spec, "module_k.abc.so", "module_k_cuda_abc", 3)
    assert "parallel_flags = --split-compile=3 --threads=2" in text
    assert "$device_flags $parallel_flags $arch_flags" in text
    assert "parallel_flags = \n" in generate_ninja(spec, "module_k.abc.so", "module_k_cuda_abc", 1) + "\n"
    assert not any("split-compile" in f for f in spec.device_flags)  # so the key ignores the core count
    assert compute_key(spec) == compute_key(make_spec(_registry(tmp_path).get("module_k"), "cuda", env))
    assert read_env({"AITER_LITE_DEVICE_THREADS": "1"}).device_threads == 1


def test_hip_link_uses_gcc_openmp_and_names_the_archs(tmp_path):
    _fake_compiler(tmp_path / "rocm", "hipcc", "HIP version: 5.2.21153-0")
    env = read_env({"ROCM_PATH": str(tmp_path / "rocm"), "AITER_LITE_ARCH": "gfx90a,gfx940"})
    spec = make_spec(_registry(tmp_path).get("module_k"), "hip", env)
    assert spec.link_flags == ("-shared", "-fopenmp=libgomp", "--offload-arch=gfx90a", "--offload-arch=gfx940")
    from aiter_lite.jit.toolchain import compiler_env

    assert compiler_env("hip") == {"HIP_PLATFORM": "amd"} and compiler_env("cuda") == {}


class _FakeLibcuda:
    """The four driver calls _cuda_driver_capabilities makes, for two devices: 9.0 and 8.0."""

    def __init__(self, caps=((9, 0), (8, 0)), init_status=0):
        self.caps, self.init_status = caps, init_status

    def cuInit(self, flags):
        return self.init_status

    def cuDeviceGetCount(self, count):
        count._obj.value = len(self.caps)
        return 0

    def cuDeviceGet(self, dev, i):
        dev._obj.value = i
        return 0

    def cuDeviceGetAttribute(self, value, attr, dev):
        value._obj.value = self.caps[dev.value][0 if attr == 75 else 1]
        return 0


def test_visible_cuda_archs_without_importing_torch(monkeypatch):
    """A prebuild reads the GPUs' archs from the driver, not through `import torch`; a driver that
    fails falls back to torch."""
    import ctypes
    import sys

    from aiter_lite.jit import toolchain

    monkeypatch.setattr(ctypes, "CDLL", lambda name: _FakeLibcuda())
    assert toolchain._cuda_driver_capabilities() == [(9, 0), (8, 0)]
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    toolchain._visible_archs.cache_clear()
    try:
        assert toolchain._visible_archs("cuda") == ("sm_80", "sm_90a")
        assert "torch" not in sys.modules
    finally:
        toolchain._visible_archs.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: _FakeLibcuda(init_status=100))  # CUDA_ERROR_NO_DEVICE
    assert toolchain._cuda_driver_capabilities() is None


def test_no_driver_means_no_driver_archs(monkeypatch):
    import ctypes

    from aiter_lite.jit import toolchain

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert toolchain._cuda_driver_capabilities() is None
