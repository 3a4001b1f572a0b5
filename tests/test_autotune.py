"""The matmul autotuner (aiter_lite/tuning/autotune.py) on the CPU, with a fake device and a fake
timer/launcher: keys and buckets, which configs get timed, persistence across a fresh load, corrupt
and stale files, concurrent writers, graph capture, an unwritable cache, and the env switch."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aiter_lite.tuning import autotune as at
from aiter_lite.tuning.hardware import H100_SXM
from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS, PATHS
from aiter_lite.tuning.planner import rank_table_configs, table_order

REPO = Path(__file__).resolve().parent.parent
DEVICE = "Fake H100"
WGMMA = "wgmma_16"
needs_wgmma = pytest.mark.skipif(WGMMA not in PATHS, reason="no wgmma_16 configs in the table")


def fake_info(index):
    return at.DeviceInfo(DEVICE, "sm_90", H100_SXM)


def wgmma_configs(elem=2, smem=H100_SXM.smem_per_block, m=4096):
    """The wgmma configs the autotuner times beside the planner's for an m-row A: those that fit, less the ones that
    load fewer rows of A than m (a_rows)."""
    return [c.index for c in MATMUL_CONFIGS if c.path == WGMMA and c.smem_bytes(elem) <= smem
            and not (c.a_rows and m > c.a_rows)]


class FakeGPU:
    """run(a, b, out, config) records the launch; timer(fns, reps) runs each fn once and reports the
    time `times` gives its config (default: 100 us + the config index, so the lowest index wins, and
    1000 us for the kernel's own choice, config -1)."""

    def __init__(self, times=None):
        self.times = times or {}
        self.launches = []
        self.timed = []

    def run(self, a, b, out, config):
        self.launches.append((a, b, out, config))

    def timer(self, fns, reps):
        us = []
        for fn in fns:
            fn()
            cfg = self.launches[-1][3]
            self.timed.append(cfg)
            us.append(self.times.get(cfg, 1000.0 if cfg == -1 else 100.0 + cfg))
        return us


def make_tuner(tmp_path, gpu=None, **kw):
    store = at.TunedConfigStore(tmp_path / "cache" / "tuning" / at.FILE_NAME, tmp_path / "locks")
    gpu = gpu or FakeGPU()
    kw.setdefault("capturing", lambda: False)
    return at.Autotuner(store, device_info=fake_info, timer=gpu.timer, **kw), gpu


def operands(m, n, k, dtype=torch.float16, batch=1, ta=False, tb=False):
    a = torch.randn(batch, k, m).transpose(1, 2) if ta else torch.randn(batch, m, k)
    b = torch.randn(batch, n, k).transpose(1, 2) if tb else torch.randn(batch, k, n)
    return a.to(dtype), b.to(dtype), torch.empty(batch, m, n, dtype=dtype)


def planner_top(m, n, k, dtype, path, k_top=at.DEFAULT_TOP_K, batch=1, arch="sm_90"):
    """The tuner's planner candidates on a fake GPU of `arch`: the sm_90a image holds only the
    tensor-core configs of tc_config_on_sm90, so on sm_90 the ranking keeps those."""
    from aiter_lite.tuning.matmul_configs import tc_config_on_sm90

    ests = rank_table_configs(m, n, k, dtype, H100_SXM, path=path, batch=batch)
    return [e.config.index for e in table_order(ests)
            if arch != "sm_90" or tc_config_on_sm90(e.config.index)][:k_top]


# ---- keys ---------------------------------------------------------------------------------------


def test_layout_class():
    a, b, _ = operands(64, 32, 16)
    assert at.layout_class(a.stride(), b.stride()) == "nn"
    a, b, _ = operands(64, 32, 16, ta=True, tb=True)
    assert at.layout_class(a.stride(), b.stride()) == "tt"
    a, b, _ = operands(64, 32, 16, tb=True)
    assert at.layout_class(a.stride(), b.stride()) == "nt"


def test_keys_bucket_shapes_and_name_the_path(tmp_path):
    tuner, _ = make_tuner(tmp_path)
    k1 = tuner.key(*operands(3000, 3000, 3000)[:2], False, "auto")   # 3000 % 8 == 0
    k2 = tuner.key(*operands(4096, 2056, 4096)[:2], False, "auto")  # N % 8 == 0: 16-byte aligned rows
    assert k1 == k2 and (k1.m, k1.n, k1.k, k1.batch) == (4096, 4096, 4096, 1)
    # both have B rows at odd multiples of 16 bytes (N = 8 mod 16), which the Hopper planner treats apart
    assert k1.path == "tensor_core_16" and k1.dtype == "fp16" and k1.layout == "nn+off16"
    k3 = tuner.key(*operands(3000, 3008, 3000)[:2], False, "auto")
    assert k3.layout == "nn" and k3 != k1
    assert tuner.key(*operands(3000, 3000, 3000, torch.float32)[:2], True, "auto").layout == "nn"  # 16-bit only
    assert k1.device == DEVICE and k1.arch == "sm_90"
    assert tuner.key(*operands(4097, 3000, 3000)[:2], False, "auto") != k1
    assert tuner.key(*operands(3000, 3008, 3000, ta=True)[:2], False, "auto").layout == "tn"
    assert tuner.key(*operands(64, 64, 64, batch=3)[:2], False, "auto").batch == 4
    # dtype and variant pick the path
    assert tuner.key(*operands(64, 64, 64, torch.bfloat16)[:2], False, "tiled").path == "simt"
    assert tuner.key(*operands(64, 64, 64, torch.float32)[:2], False, "auto").path == "simt"
    k = tuner.key(*operands(64, 64, 64, torch.float32)[:2], True, "auto")
    assert (k.path, k.dtype) == ("tensor_core_tf32", "tf32")
    assert "tensor_core_16/auto/fp16/nn+off16/sm_90/m4096_n4096_k4096_b1" == k1.entry


def test_untunable_calls_have_no_key(tmp_path):
    tuner, _ = make_tuner(tmp_path)
    a, b, _ = operands(64, 64, 64)
    assert tuner.key(a, b, False, "naive") is None
    assert tuner.key(a, b, False, "some_future_variant") is None
    # a layout the tensor-core kernels refuse (odd leading dim): the call runs SIMT's default anyway
    a_odd = torch.randn(1, 64, 67).to(torch.float16)[:, :, :64]
    assert tuner.key(a_odd, b, False, "auto") is None
    assert tuner.key(a_odd, b, False, "tiled") is not None  # the SIMT kernel takes any layout and a config


# ---- tuning and reuse ---------------------------------------------------------------------------


def test_times_the_planner_top_k_on_fresh_data_and_keeps_the_fastest(tmp_path, caplog):
    top = planner_top(4096, 4096, 4096, "fp16", "tensor_core_16")
    assert len(top) >= 2
    gpu = FakeGPU({top[1]: 10.0})  # the planner's second choice is the fastest
    tuner, _ = make_tuner(tmp_path, gpu)
    a, b, out = operands(4096, 4096, 4096)
    with caplog.at_level(logging.INFO, logger="aiter_lite.tuning.autotune"):
        cfg = tuner.select(a, b, out, False, "auto", gpu.run)
    assert cfg == top[1]
    # the planner's top-k, the Hopper configs it does not model (auto may run them on sm_90) and the
    # kernel's own choice
    assert sorted(set(gpu.timed)) == sorted(top + wgmma_configs() + [-1])
    assert tuner.tunings == 1
    lines = [r for r in caplog.records if "autotune matmul" in r.getMessage()]
    assert len(lines) == 1 and f"config {top[1]}" in lines[0].getMessage()
    # timed on fresh random data laid out like the call, never the caller's tensors
    fa, fb, fo, _ = gpu.launches[0]
    assert fa is not a and fb is not b and fo is not out
    assert fa.shape == a.shape and fa.stride() == a.stride() and fa.dtype == a.dtype
    assert fa.abs().sum() > 0 and not torch.equal(fa, a)
    # the same bucket again, and a different shape in it: a lookup, no timing
    n_launches = len(gpu.launches)
    assert tuner.select(a, b, out, False, "auto", gpu.run) == top[1]
    assert tuner.select(*operands(3000, 3008, 3000), False, "auto", gpu.run) == top[1]
    assert len(gpu.launches) == n_launches and tuner.tunings == 1
    # the file has the entry, with the tile it names
    doc = json.loads(tuner.store.path.read_text())
    rec = doc["devices"][DEVICE]["tensor_core_16/auto/fp16/nn/sm_90/m4096_n4096_k4096_b1"]
    assert rec["config"] == top[1] and rec["tile"] == list(MATMUL_CONFIGS[top[1]][1:])
    assert rec["planner_order"] == top and rec["shape"] == [4096, 4096, 4096, 1]
    assert rec["candidates"] == top + wgmma_configs()


@needs_wgmma
def test_the_hopper_family_is_timed_only_where_it_can_run(tmp_path):
    # another arch: auto never runs wgmma there, so only the planner's configs
    store = at.TunedConfigStore(tmp_path / at.FILE_NAME, tmp_path / "locks")
    gpu = FakeGPU()
    a100 = at.Autotuner(store, device_info=lambda i: at.DeviceInfo("Fake A100", "sm_80", H100_SXM),
                        timer=gpu.timer, capturing=lambda: False)
    a100.select(*operands(4096, 4096, 4096), False, "auto", gpu.run)
    assert sorted(set(gpu.timed)) == sorted(planner_top(4096, 4096, 4096, "fp16", "tensor_core_16", arch="sm_80")
                                            + [-1])
    # variant="tensor_core" asks for mma.sync: no wgmma either
    tuner, gpu = make_tuner(tmp_path / "tc")
    tuner.select(*operands(4096, 4096, 4096), False, "tensor_core", gpu.run)
    assert not set(gpu.timed) & set(wgmma_configs())


@needs_wgmma
def test_variant_wgmma_times_its_own_configs(tmp_path):
    best = wgmma_configs()[-1]
    tuner, gpu = make_tuner(tmp_path, FakeGPU({best: 5.0}))
    args = operands(4096, 4096, 4096, torch.bfloat16)
    assert tuner.key(*args[:2], False, "wgmma").path == WGMMA
    assert tuner.key(*operands(64, 64, 64, torch.float32)[:2], False, "wgmma") is None
    assert tuner.select(*args, False, "wgmma", gpu.run) == best
    assert sorted(set(gpu.timed)) == sorted(wgmma_configs() + [-1])
    (rec,) = json.loads(tuner.store.path.read_text())["devices"][DEVICE].values()
    assert rec["planner_order"] == [] and rec["tile"] == list(MATMUL_CONFIGS[best][1:])


@needs_wgmma
def test_a_stored_hopper_config_of_an_auto_key_is_reused(tmp_path):
    best = wgmma_configs()[0]
    tuner, gpu = make_tuner(tmp_path, FakeGPU({best: 5.0}))
    assert tuner.select(*operands(2048, 2048, 2048), False, "auto", gpu.run) == best
    again, gpu2 = make_tuner(tmp_path)
    assert again.select(*operands(2048, 2048, 2048), False, "auto", gpu2.run) == best and again.tunings == 0


def test_fresh_data_keeps_transposes_and_broadcast_batches():
    a = torch.randn(1, 32, 16).transpose(1, 2).expand(3, 16, 32).to(torch.float16)
    f = at._fresh_like(a)
    assert f.shape == a.shape and f.stride() == a.stride() and f.dtype == a.dtype


def test_top_k_and_reps_are_parameters(tmp_path):
    tuner, gpu = make_tuner(tmp_path, top_k=2)
    tuner.select(*operands(4096, 4096, 4096, torch.float32), False, "auto", gpu.run)
    assert sorted(set(gpu.timed)) == sorted(planner_top(4096, 4096, 4096, "fp32", "simt", 2) + [-1])
    with pytest.raises(ValueError):
        make_tuner(tmp_path, reps=0)


def test_the_kernels_default_wins_when_it_is_fastest(tmp_path):
    tuner, gpu = make_tuner(tmp_path, FakeGPU({-1: 1.0}))
    assert tuner.select(*operands(2048, 2048, 2048), False, "auto", gpu.run) == -1
    (rec,) = json.loads(tuner.store.path.read_text())["devices"][DEVICE].values()
    assert rec["config"] == -1 and rec["tile"] is None and rec["us"]["-1"] == 1.0
    again, gpu2 = make_tuner(tmp_path)
    assert again.select(*operands(2048, 2048, 2048), False, "auto", gpu2.run) == -1 and again.tunings == 0


def test_persists_across_a_fresh_load(tmp_path):
    tuner, gpu = make_tuner(tmp_path)
    first = tuner.select(*operands(2048, 2048, 2048, torch.bfloat16), False, "auto", gpu.run)

    def no_timing(fns, reps):
        raise AssertionError("a stored config must not be timed again")

    fresh = at.Autotuner(at.TunedConfigStore(tuner.store.path, tmp_path / "locks"), device_info=fake_info,
                         timer=no_timing, capturing=lambda: False)
    launches = []
    assert fresh.select(*operands(2048, 2048, 2048, torch.bfloat16), False, "auto",
                        lambda *x: launches.append(x)) == first
    assert fresh.tunings == 0 and not launches


def test_corrupt_file_is_ignored_with_a_warning_and_rewritten(tmp_path, caplog):
    tuner, gpu = make_tuner(tmp_path)
    path = tuner.store.path
    path.parent.mkdir(parents=True)
    for garbage in ("{not json", json.dumps({"schema": 999, "devices": {}}), json.dumps([1, 2])):
        path.write_text(garbage)
        tuner, gpu = make_tuner(tmp_path)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="aiter_lite.tuning.autotune"):
            cfg = tuner.select(*operands(1024, 1024, 1024), False, "auto", gpu.run)
        assert any("corrupt" in r.getMessage() for r in caplog.records)
        assert tuner.tunings == 1
        doc = json.loads(path.read_text())  # rewritten, valid, with the new entry
        assert doc["schema"] == at.SCHEMA
        assert [r["config"] for r in doc["devices"][DEVICE].values()] == [cfg]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temp files left


def test_stale_entry_for_a_changed_table_is_tuned_again(tmp_path):
    tuner, gpu = make_tuner(tmp_path)
    tuner.select(*operands(1024, 1024, 1024), False, "auto", gpu.run)
    doc = json.loads(tuner.store.path.read_text())
    (entry, rec), = doc["devices"][DEVICE].items()
    rec["tile"] = ["tensor_core_16", 1, 2, 3, 4, 5, 6]     # the index now names another tile
    doc["devices"][DEVICE]["tiled/other"] = {"config": 10 ** 6, "tile": []}  # out of range: ignored
    tuner.store.path.write_text(json.dumps(doc))
    again, gpu2 = make_tuner(tmp_path)
    again.select(*operands(1024, 1024, 1024), False, "auto", gpu2.run)
    assert again.tunings == 1
    assert json.loads(tuner.store.path.read_text())["devices"][DEVICE][entry]["tile"] != rec["tile"]


def test_entries_of_other_devices_are_kept(tmp_path):
    tuner, gpu = make_tuner(tmp_path)
    tuner.store.record("Some Other GPU", "x/y", {"config": 0, "tile": list(MATMUL_CONFIGS[0][1:])})
    tuner.select(*operands(1024, 1024, 1024), False, "auto", gpu.run)
    devices = json.loads(tuner.store.path.read_text())["devices"]
    assert set(devices) == {"Some Other GPU", DEVICE}


def test_no_tuning_while_a_graph_is_captured(tmp_path):
    capturing = [True]
    tuner, gpu = make_tuner(tmp_path, capturing=lambda: capturing[0])
    args = operands(1024, 1024, 1024)
    assert tuner.select(*args, False, "auto", gpu.run) == -1
    assert not gpu.launches and tuner.tunings == 0 and not tuner.store.path.exists()
    capturing[0] = False
    assert tuner.select(*args, False, "auto", gpu.run) >= 0 and tuner.tunings == 1


def test_unwritable_cache_keeps_the_result_in_memory(tmp_path, caplog):
    store = at.TunedConfigStore(tmp_path / "not_a_dir" / at.FILE_NAME, tmp_path / "locks")
    (tmp_path / "not_a_dir").write_text("a file where the cache dir should be")
    gpu = FakeGPU()
    tuner = at.Autotuner(store, device_info=fake_info, timer=gpu.timer, capturing=lambda: False)
    with caplog.at_level(logging.WARNING, logger="aiter_lite.tuning.autotune"):
        cfg = tuner.select(*operands(1024, 1024, 1024), False, "auto", gpu.run)
    assert cfg >= 0 and any("could not record" in r.getMessage() for r in caplog.records)
    assert tuner.select(*operands(1024, 1024, 1024), False, "auto", gpu.run) == cfg and tuner.tunings == 1


def test_a_config_the_kernel_refuses_is_skipped(tmp_path):
    top = planner_top(4096, 4096, 4096, "fp16", "tensor_core_16")
    gpu = FakeGPU()

    def run(a, b, out, config):
        if config == top[0]:
            raise ValueError("refused")
        gpu.run(a, b, out, config)

    tuner, _ = make_tuner(tmp_path, gpu)
    assert tuner.select(*operands(4096, 4096, 4096), False, "auto", run) == min(top[1:])


# ---- concurrent writers -------------------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from aiter_lite.tuning.autotune import TunedConfigStore
from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS
store = TunedConfigStore(Path(sys.argv[1]), Path(sys.argv[2]))
for i in range(int(sys.argv[4])):
    c = MATMUL_CONFIGS[i % len(MATMUL_CONFIGS)]
    assert store.record("GPU " + sys.argv[3][-1], f"w{sys.argv[3]}/e{i}", {"config": c.index, "tile": list(c[1:])})
"""


def test_concurrent_writers_lose_no_entry(tmp_path):
    path, locks = tmp_path / "cache" / "tuning" / at.FILE_NAME, tmp_path / "locks"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    writers, per = 4, 15
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(locks), f"p{w}", str(per)], env=env,
                              stderr=subprocess.PIPE, text=True) for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    devices = json.loads(path.read_text())["devices"]
    entries = {e for sec in devices.values() for e in sec}
    assert entries == {f"wp{w}/e{i}" for w in range(writers) for i in range(per)}
    assert not [p for p in path.parent.iterdir() if p.name != at.FILE_NAME]


# ---- the switch ---------------------------------------------------------------------------------


def test_env_switch_is_read_once_and_strictly(monkeypatch, tmp_path):
    monkeypatch.setenv("AITER_LITE_CACHE_DIR", str(tmp_path / "c"))
    at.reset()
    try:
        monkeypatch.delenv("AITER_LITE_AUTOTUNE", raising=False)
        assert at.enabled() is False
        monkeypatch.setenv("AITER_LITE_AUTOTUNE", "1")
        assert at.enabled() is False  # read once
        at.reset()
        assert at.enabled() is True
        monkeypatch.setenv("AITER_LITE_AUTOTUNE_TOP_K", "2")
        tuner = at.get_tuner()
        assert tuner.top_k == 2 and tuner.store.path == tmp_path / "c" / "tuning" / at.FILE_NAME
        assert at.get_tuner() is tuner
        monkeypatch.setenv("AITER_LITE_AUTOTUNE", "maybe")
        at.reset()
        with pytest.raises(ValueError, match="AITER_LITE_AUTOTUNE"):
            at.enabled()
    finally:
        at.reset()


def test_configure_overrides_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AITER_LITE_AUTOTUNE", "0")
    at.reset()
    try:
        tuner, _ = make_tuner(tmp_path)
        at.configure(enabled=True, tuner=tuner)
        assert at.enabled() is True and at.get_tuner() is tuner
        at.configure(enabled=False)
        assert at.enabled() is False and at.get_tuner() is tuner
    finally:
        at.reset()
    assert at.enabled() is False


def test_cpu_matmul_never_consults_the_tuner(monkeypatch):
    import aiter_lite

    monkeypatch.setenv("AITER_LITE_AUTOTUNE", "1")
    at.reset()

    def boom(*args, **kw):
        raise AssertionError("the tuner was consulted for a CPU call")

    monkeypatch.setattr(at, "select_config", boom)
    try:
        a, b = torch.randn(8, 4), torch.randn(4, 3)
        torch.testing.assert_close(aiter_lite.matmul(a, b), a @ b)
    finally:
        at.reset()


def test_importing_the_tuner_does_not_import_torch():
    code = "import sys, aiter_lite.tuning.autotune; assert 'torch' not in sys.modules"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(REPO))
    assert r.returncode == 0, r.stderr


def test_configs_loading_32_rows_of_a_are_timed_only_for_32_rows_or_fewer(tmp_path):
    """The a_rows configs compute only their rows of A (a forced one falls back on more): the autotuner times them
    for A of at most that many rows, not beyond."""
    tuner, _ = make_tuner(tmp_path)
    for m, timed in ((32, True), (33, False)):
        a, b, _ = operands(m, 4096, 4096, torch.bfloat16)
        key = tuner.key(a, b, False, "wgmma")
        _, others = tuner.candidates(key, H100_SXM, m, 4096, 4096, 1)
        assert any(MATMUL_CONFIGS[c].a_rows for c in others) == timed, (m, others)
