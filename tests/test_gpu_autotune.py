"""The matmul autotuner on a real GPU (AITER_LITE_AUTOTUNE's path through aiter_lite.matmul): tuned
calls stay correct, tune once per key, time only the planner's top configs, persist, and leave CUDA
graph capture alone. Skipped without CUDA; the CPU tests are in test_autotune.py."""
from __future__ import annotations

import json

import pytest
import torch

from aiter_lite.tuning import autotune as at
from aiter_lite.tuning.matmul_configs import tc_config_on_sm90
from aiter_lite.tuning.planner import rank_table_configs, table_order

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture
def tuner(tmp_path):
    """Autotuning on, with its own tuned-config file (the module cache stays the session's)."""
    store = at.TunedConfigStore(tmp_path / "tuning" / at.FILE_NAME, tmp_path / "locks")
    t = at.Autotuner(store)
    at.configure(enabled=True, tuner=t)
    yield t
    at.reset()


def _rel(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("mode", ["bf16", "fp16", "fp32", "tf32"])
def test_tuned_calls_are_correct_and_tuned_once(tuner, mode):
    import aiter_lite

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode, torch.float32)
    tf32 = mode == "tf32"
    a = torch.randn(1000, 768, device="cuda").to(dtype)
    b = torch.randn(768, 1536, device="cuda").to(dtype)
    ref = a.double() @ b.double()
    out = aiter_lite.matmul(a, b, allow_tf32=tf32)
    tol = {"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-5, "tf32": 1e-3}[mode]
    assert _rel(out, ref) <= tol
    assert tuner.tunings == 1
    for _ in range(3):  # same key: no more timing, same result
        assert _rel(aiter_lite.matmul(a, b, allow_tf32=tf32), ref) <= tol
    assert tuner.tunings == 1
    (section,) = json.loads(tuner.store.path.read_text())["devices"].values()
    (rec,) = section.values()
    path = "simt" if mode == "fp32" else ("tensor_core_tf32" if tf32 else "tensor_core_16")
    ests = rank_table_configs(1000, 1536, 768, mode, tuner.device(a.get_device()).model, path=path)
    ranked = [e.config.index for e in table_order(ests)]
    if torch.cuda.get_device_capability() == (9, 0):  # the sm_90a image holds two mma.sync configs a path
        ranked = [i for i in ranked if tc_config_on_sm90(i)]
    top = ranked[:tuner.top_k]
    assert rec["planner_order"] == top and rec["candidates"][:len(top)] == top
    assert rec["config"] in rec["candidates"] + [-1]
    assert set(map(int, rec["us"])) <= set(rec["candidates"]) | {-1}  # the kernel's own choice is timed too
    assert {-1, *top} <= set(map(int, rec["us"]))


def test_a_fresh_tuner_reuses_the_file(tuner):
    import aiter_lite

    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    aiter_lite.matmul(a, a)
    fresh = at.Autotuner(at.TunedConfigStore(tuner.store.path, tuner.store.lock_dir))
    at.configure(tuner=fresh)
    aiter_lite.matmul(a, a)
    assert fresh.tunings == 0


def test_no_tuning_inside_graph_capture(tuner):
    import aiter_lite

    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    out = torch.empty(256, 256, device="cuda", dtype=torch.float16)
    # mma.sync (variant tensor_core): the test is about the tuner, not about capturing other kernels
    aiter_lite.matmul(a, b, out, variant="tensor_core", config=9)  # loaded and warm; explicit: not tuned (9: built for every arch)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            aiter_lite.matmul(a, b, out, variant="tensor_core")
    assert tuner.tunings == 0
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert _rel(out, a.double() @ b.double()) <= 2e-3


def test_plan_vs_measure_runs_on_the_gpu(tmp_path):
    """bench/plan_vs_measure.py end to end on one small shape (the full run is the lead's H100 job)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    out = tmp_path / "pvm.json"
    env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(repo / "bench" / "plan_vs_measure.py"), "--shapes", "512x384x256",
                        "--dtypes", "bf16,fp32,tf32", "--quick", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert {x["impl"] for x in doc["records"]} == {"cublas", "aiter_lite", "aiter_lite_auto", "aiter_lite_tuned"}
    for c in doc["comparisons"]:
        assert c["tuned_us"] > 0 and c["planner_rank_of_best"] is not None
