"""Build-time shards (docs/jit.md, "Shards"): a source with "shards": N compiles N times, unit i with
-DAITER_LITE_SHARD=i; the module learns N through AITER_LITE_SHARDS_<STEM>; the dispatch finds each
item in its shard; the key, the build progress and registry validation know about it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiter_lite.jit import RegistryError, load_registry, read_env
from aiter_lite.jit.env import package_root
from aiter_lite.jit.key import compute_key
from aiter_lite.jit.ninja import generate_ninja
from aiter_lite.jit.spec import make_spec

DATA = Path(__file__).resolve().parent / "data" / "sharded"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def sharded(tmp_path, monkeypatch):
    src = tmp_path / "sharded"
    shutil.copytree(DATA, src)
    monkeypatch.setenv("AITER_LITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AITER_LITE_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("AITER_LITE_LOG", "warning")
    return src


def registry(src: Path, shards=None):
    path = src / "jit_config_test.json"
    if shards is not None:
        data = json.loads(path.read_text())
        data["modules"]["module_sharded"]["sources"]["cpu"][1]["shards"] = shards
        path = src / f"jit_config_{shards}.json"
        path.write_text(json.dumps(data))
    return load_registry([path], package_root() / "csrc")


def spec_of(src, shards=None):
    return make_spec(registry(src, shards).get("module_sharded"), "cpu", read_env())


def test_units_defines_and_ninja(sharded):
    spec = spec_of(sharded)
    parts = [u for u in spec.units if u.source.name == "parts.cpp"]
    assert [u.defines for u in parts] == [(f"-DAITER_LITE_SHARD={i}", "-DAITER_LITE_SHARDS=3") for i in range(3)]
    assert [u.label.rsplit("/", 1)[-1] for u in parts] == [f"parts.cpp (shard {i} of 3)" for i in (1, 2, 3)]
    assert "-DAITER_LITE_SHARDS_PARTS=3" in spec.cxx_flags  # the whole module knows N
    ninja = generate_ninja(spec, "module_sharded.x.so", "module_sharded_cpu_x")
    objects = [l.split(":")[0].split()[1] for l in ninja.splitlines() if l.startswith("build obj/")]
    assert len(objects) == len(set(objects)) == 4
    for i in range(3):
        assert f"unit_defines = -DAITER_LITE_SHARD={i} -DAITER_LITE_SHARDS=3" in ninja


def test_key_depends_on_shards(sharded):
    keys = {compute_key(spec_of(sharded, n)) for n in (1, 2, 3)}
    assert len(keys) == 3
    assert compute_key(spec_of(sharded)) == compute_key(spec_of(sharded, 3))
    # shards 1 is the plain build: no unit defines and no module define
    plain = spec_of(sharded, 1)
    assert all(not u.defines for u in plain.units) and not any("SHARDS_PARTS" in f for f in plain.cxx_flags)


@pytest.mark.parametrize("shards", [3, 1])
def test_each_item_comes_from_its_shard(sharded, shards):
    # In a new process: one process loads one build of a pybind11 module name.
    registry(sharded, shards)
    code = ("import json, sys; from aiter_lite.jit import build_module, load_library, load_registry; "
            "from aiter_lite.jit.env import package_root; "
            "reg = load_registry([sys.argv[1]], package_root() / 'csrc'); "
            "m = load_library('module_sharded', build_module('module_sharded', 'cpu', registry=reg)); "
            "print(json.dumps([m.shards, [m.part(i) for i in range(8)], m.wrong_shard()]))")
    config = sharded / f"jit_config_{shards}.json"
    out = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    n, parts, wrong = json.loads(out)
    assert n == shards
    assert parts == [i * 100 + i % shards for i in range(8)]
    assert wrong == (-1 if shards > 1 else 100)


def test_shipped_opt_in_files_build_unsharded_and_sharded():
    """The shipped registry may shard any opted-in file (shard.h) or none: a sharded source must use
    AITER_LITE_SHARD, and the opted-in files' dispatch reads AITER_LITE_SHARDS_<STEM> (default 1)."""
    root = package_root()
    reg = load_registry([root / "jit_config.json"], root / "csrc")
    for entry in reg:
        for backend, sources in entry.sources.items():
            for s in sources:
                if s.shards > 1:
                    assert "AITER_LITE_SHARD" in s.path.read_text(), (entry.name, backend, s.path.name)
    kernels = root / "csrc" / "kernels"
    launch = (kernels / "matmul_launch.h").read_text()
    for stem in ("MATMUL_TC_FP16", "MATMUL_TC_BF16", "MATMUL_TC_TF32", "MATMUL_WGMMA_FP16", "MATMUL_WGMMA_BF16"):
        assert f"#ifndef AITER_LITE_SHARDS_{stem}" in launch
    for name in ("matmul_tc_fp16.cu", "matmul_wgmma_bf16.cu", "matmul_simt.cu", "causal_conv1d_update.cu",
                 "causal_conv1d_fwd.cu", "causal_conv1d_bwd_rows.cu", "causal_conv1d_bwd_channel_last.cu",
                 "causal_conv1d_bwd_tile.cu"):
        assert "AITER_LITE_SHARD" in (kernels / name).read_text(), name


@pytest.mark.parametrize("value, message", [(0, "expected 1..64 shards, got 0"), (65, "expected 1..64 shards, got 65"),
                                            ("2", "expected an integer"), (True, "expected an integer")])
def test_bad_shards(tmp_path, value, message):
    (tmp_path / "a.cpp").write_text("// test source\n")
    path = tmp_path / "reg.json"
    path.write_text(json.dumps({"modules": {"module_x": {"sources": {"cpu": [{"path": "a.cpp", "shards": value}]}}}}))
    with pytest.raises(RegistryError) as info:
        load_registry([path], tmp_path)
    assert message in str(info.value) and "sources.cpu[0].shards" in str(info.value)
