"""bench/plan_vs_measure.py on the CPU: the dry run, the comparison arithmetic, the replanning and the
docs table helper (tests/test_gpu_autotune.py runs the measurement on a GPU). The numbers in the
synthetic documents below are made up for the tests."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "plan_vs_measure.py"


@pytest.fixture(scope="module")
def pvm():
    spec = importlib.util.spec_from_file_location("plan_vs_measure", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_script(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=timeout)


def test_dry_run_lists_every_config_of_each_path():
    r = run_script("--dry-run")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if "torch.matmul, auto + configs" in l]
    assert len(lines) == 6 * 4  # six shapes x fp16, bf16, fp32, tf32
    assert any("4096x11008x4096 tf32" in l and "[10, 11, 12]" in l for l in lines)
    assert any("128x8192x8192 fp32" in l and "variant=tiled" in l for l in lines)
    assert "timings" in r.stdout.splitlines()[-1]


def test_dry_run_respects_the_device_shared_memory(pvm):
    from aiter_lite.tuning.hardware import H100_SXM

    p = pvm.planned((4096, 4096, 4096), "bf16", H100_SXM, 99 * 1024)  # an sm_86-sized block
    assert 5 not in p["configs"] and p["configs"]  # config 5 needs 144 KB


def test_spearman(pvm):
    assert pvm.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert pvm.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert pvm.spearman([1, 1, 2], [5, 6, 7]) == pytest.approx(0.866, abs=1e-3)  # ties averaged
    assert pvm.spearman([1, 2], [1, 2]) is None
    assert pvm.spearman([1, 1, 1], [1, 2, 3]) is None


def test_compare(pvm):
    p = {"M": 64, "N": 64, "K": 64, "dtype": "bf16", "path": "tensor_core_16", "planner_order": [7, 6, 5, 8, 9],
         "predicted_us": {"5": 10.0, "6": 10.0, "7": 10.0, "8": 12.0, "9": None}}
    measured = {5: 20.0, 6: 25.0, 7: 30.0, 8: 40.0, 9: 50.0}
    c = pvm.compare(p, measured, cublas_us=15.0, auto_us=25.0)
    assert c["measured_best"] == 5 and c["planner_top3"] == [7, 6, 5]
    assert c["planner_rank_of_best"] == 3 and c["best_tied_with_pick"]
    assert c["planner_pick"] == 7 and c["planner_pick_slowdown"] == 1.5 and c["auto_slowdown"] == 1.25
    assert c["spearman"] is not None and c["spearman"] > 0  # config 9 has no prediction: left out


def synthetic_doc():
    return {"device": "Test GPU", "date": "2000-01-01T00:00:00+00:00", "torch": "x", "timer": "t",
            "planner_device": "model",
            "records": [{"M": 64, "N": 64, "K": 64, "dtype": "bf16", "impl": "aiter_lite", "config": 5, "us": 20.0,
                         "tflops": 0.03, "rel_err": 1e-3, "ok": True}],
            "comparisons": [{"M": 64, "N": 64, "K": 64, "dtype": "bf16", "path": "tensor_core_16",
                             "measured_best": 5, "measured_best_us": 20.0, "measured_best_predicted_us": 10.0,
                             "planner_top3": [7, 6, 5], "planner_rank_of_best": 3, "best_tied_with_pick": True,
                             "planner_pick": 7, "planner_pick_us": 30.0, "planner_pick_slowdown": 1.5,
                             "planner_pick_predicted_us": 10.0, "auto_us": 25.0, "auto_slowdown": 1.25,
                             "tuned_config": 6, "tuned_us": 22.0, "tuned_slowdown": 1.1,
                             "cublas_us": 15.0, "spearman": 0.4, "measured_us": {}, "predicted_us": {}}]}


def test_markdown_and_docs_update(pvm, tmp_path):
    table = pvm.markdown(synthetic_doc())
    row = [l for l in table.splitlines() if l.startswith("| 64×64×64 |")]
    assert row and "5: 20.0" in row[0] and "3 (tied with #1)" in row[0] and "1.50×" in row[0] and "1.25×" in row[0]
    assert "6: 1.10×" in row[0]
    assert "in 0 of 1 cases, in its top 3 in 1 of 1" in table
    docs = tmp_path / "planner.md"
    docs.write_text(f"before\n{pvm.DOCS_BEGIN}\nnot measured yet\n{pvm.DOCS_END}\nafter\n")
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(synthetic_doc()))
    r = run_script("--from-json", str(src), "--update-docs", str(docs))
    assert r.returncode == 0, r.stderr
    text = docs.read_text()
    assert "not measured yet" not in text and "| 64×64×64 |" in text
    assert text.startswith("before\n") and text.endswith(f"{pvm.DOCS_END}\nafter\n")
    # again: the block is replaced, not appended to
    assert run_script("--from-json", str(src), "--update-docs", str(docs)).returncode == 0
    assert docs.read_text() == text


def test_replan_ranks_the_stored_times_with_the_current_planner(pvm):
    from aiter_lite.tuning.hardware import H100_SXM

    # Stored times at 4096^3 where the small tile 9 measured slowest: the current planner must rank
    # from its own fresh plan (not the stored one), and keep the stored measurements as they were.
    doc = synthetic_doc()
    c = doc["comparisons"][0]
    c.update(M=4096, N=4096, K=4096, measured_us={"5": 327.0, "6": 322.0, "7": 330.0, "8": 325.0, "9": 430.0},
             planner_top3=[9, 8, 7], predicted_us={"9": 1.0})
    with_l2 = pvm.replan(doc, H100_SXM)["comparisons"][0]
    assert with_l2["measured_best"] == 6 and with_l2["measured_best_us"] == 322.0
    assert 9 not in with_l2["planner_top3"] and with_l2["predicted_us"]["9"] > with_l2["predicted_us"]["5"]
    assert with_l2["spearman"] > 0
    without = pvm.replan(doc, H100_SXM.with_overrides(l2_fill_bw=None))["comparisons"][0]
    assert without["predicted_us"]["5"] < with_l2["predicted_us"]["5"]  # the L2 roof is what slows it
    assert doc["comparisons"][0]["planner_top3"] == [9, 8, 7]  # the input is not changed


def test_replan_needs_from_json():
    r = run_script("--replan")
    assert r.returncode != 0 and "--replan goes with --from-json" in r.stderr


def test_the_real_docs_have_the_block(pvm):
    text = (REPO / "docs" / "planner.md").read_text()
    assert pvm.DOCS_BEGIN in text and pvm.DOCS_END in text
