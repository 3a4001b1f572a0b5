"""bench/append_results.py: appends a run's records tagged with its date and label, keeps the
one-record-per-line layout, and refuses a run from another device."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "append_results.py"


def append(run_json, results, label):
    return subprocess.run([sys.executable, str(SCRIPT), str(run_json), str(results), "--run", label],
                          capture_output=True, text=True, timeout=120)


def test_appends_tagged_records_and_refuses_other_devices(tmp_path):
    run = {"device": "GPU A", "date": "2026-11-22", "torch": "x", "records": [{"M": 1, "us": 2.0}, {"M": 3, "us": 4.0}]}
    run_json, results = tmp_path / "run.json", tmp_path / "results.json"
    run_json.write_text(json.dumps(run))
    assert append(run_json, results, "first").returncode == 0
    r = append(run_json, results, "second")
    assert r.returncode == 0 and "4 in all" in r.stdout
    doc = json.loads(results.read_text())
    assert doc["device"] == "GPU A"
    assert [rec["run"] for rec in doc["records"]] == ["first", "first", "second", "second"]
    assert all(rec["date"] == "2026-11-22" for rec in doc["records"])
    assert results.read_text().count('{"M": ') == 4  # one record per line

    run["device"] = "GPU B"
    run_json.write_text(json.dumps(run))
    r = append(run_json, results, "other")
    assert r.returncode == 2 and "GPU A" in r.stderr and "GPU B" in r.stderr
    assert len(json.loads(results.read_text())["records"]) == 4
