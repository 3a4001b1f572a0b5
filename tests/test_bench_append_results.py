"""bench/append_results.py: appends a run's records tagged with its date and label, one line per run,
reads back every field, and refuses a run from another device."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "append_results.py"
sys.path.insert(0, str(REPO / "bench"))
from records import read_run  # noqa: E402


def append(run_json, results, label):
    return subprocess.run([sys.executable, str(SCRIPT), str(run_json), str(results), "--run", label],
                          capture_output=True, text=True, timeout=120)


def test_appends_tagged_records_and_refuses_other_devices(tmp_path):
    run = {"device": "GPU A", "date": "2026-11-22", "torch": "x", "copy_tbps": 3.0,
           "records": [{"M": 1, "us": 2.0}, {"M": 3, "us": 4.0, "round_us": [4.0, 4.1]}]}
    run_json, results = tmp_path / "run.json", tmp_path / "results.json"
    run_json.write_text(json.dumps(run))
    assert append(run_json, results, "first").returncode == 0
    r = append(run_json, results, "second")
    assert r.returncode == 0 and "4 in all" in r.stdout
    doc = read_run(results)
    assert doc["device"] == "GPU A" and doc["copy_tbps"] == 3.0
    assert [rec["run"] for rec in doc["records"]] == ["first", "first", "second", "second"]
    assert all(rec["date"] == "2026-11-22" for rec in doc["records"])
    assert doc["records"][:2] == [{"M": 1, "us": 2.0, "run": "first", "date": "2026-11-22"},
                                  {"M": 3, "us": 4.0, "round_us": [4.0, 4.1], "run": "first", "date": "2026-11-22"}]
    assert results.read_text().count('"columns"') == 2  # one line per run
    assert '"meta": {"copy_tbps": 3.0}' in results.read_text()  # a later run keeps its notes

    run["device"] = "GPU B"
    run_json.write_text(json.dumps(run))
    r = append(run_json, results, "other")
    assert r.returncode == 2 and "GPU A" in r.stderr and "GPU B" in r.stderr
    assert len(read_run(results)["records"]) == 4


def test_the_repository_results_read_back():
    """Every results file is one line per run and reads back as records with their measured fields."""
    for path in (REPO / "bench" / "results").glob("*.json"):
        doc, raw = read_run(path), json.loads(path.read_text())
        assert doc["device"] and len(doc["records"]) == sum(len(g["rows"]) for g in raw["runs"])
        assert len(path.read_text().splitlines()) <= len(raw["runs"]) + len(raw) + 4
        assert all(any(k == "us" or k.endswith("_us") or k == "error" for k in r) for r in doc["records"]), path
