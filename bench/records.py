"""The JSON of a run and of a results file, and markdown tables (no torch: append_results.py and plot.py
run anywhere).

A run, what a suite writes with --out: {"device", "date", "torch", ...its notes, "records": [{...}, ...]}.
A results file, bench/results/<suite>_<gpu>.json, holds the runs of one GPU, one line per run:
the head (device, torch, and the first run's date and notes), then "runs", each
{"run": LABEL, "date": DATE, "meta": {its notes}, "columns": [...], "rows": [[...], ...]}; a null cell is
a field that record does not have. read_run() gives either kind back as a run, every record a dict
(tagged with its run's label and date in a results file).
"""
from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

HEAD_KEYS = ("device", "date", "torch")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def write_run(path, device: str, torch_version: str, records: list, **meta) -> dict:
    """Write one run's JSON (one record per line) if path is given; return the run."""
    run = {"device": device, "date": now(), "torch": torch_version, **meta, "records": records}
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        head = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in run.items() if k != "records")
        rows = ",\n".join("  " + json.dumps(r) for r in records)
        path.write_text("{\n" + head + ',\n "records": [\n' + rows + "\n ]\n}\n")
    return run


def table_of(label, date, records: list, meta=None) -> dict:
    """One run's records as a table: the union of their fields, in order of first appearance."""
    columns = list(dict.fromkeys(k for r in records for k in r if k not in ("run", "date")))
    group = {"run": label, "date": date, "meta": meta or None, "columns": columns,
             "rows": [[r.get(c) for c in columns] for r in records]}
    return {k: v for k, v in group.items() if v is not None}


def to_results(run: dict, label=None) -> dict:
    """A results file holding one run (records tagged with run and date keep their own)."""
    head = {k: v for k, v in run.items() if k != "records"}
    doc = {**head, "runs": []}
    return append(doc, run, label)


def append(doc: dict, run: dict, label) -> dict:
    """Add a run to a results file: one table per (run label, date) of its records, in order."""
    meta = {k: v for k, v in run.items() if k not in (*HEAD_KEYS, "records")}
    groups: list = []
    for r in run["records"]:
        key = (r.get("run"), r.get("date")) if label is None else (label, r.get("date", run.get("date")))
        if not groups or groups[-1][0] != key:
            groups.append((key, []))
        groups[-1][1].append(r)
    first_meta = meta if doc["runs"] else None  # the first run's notes are the head's
    for i, ((lab, date), recs) in enumerate(groups):
        doc["runs"].append(table_of(lab, date, recs, first_meta if i == 0 else None))
    return doc


def dump_results(doc: dict) -> str:
    head = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in doc.items() if k != "runs"]
    runs = ",\n".join("  " + json.dumps(g) for g in doc["runs"])
    return "\n".join(["{", *head, ' "runs": [', runs, " ]", "}"]) + "\n"


def read_run(path) -> dict:
    """A run's JSON, or a results file as one run holding every record."""
    doc = json.loads(Path(path).read_text())
    if "runs" not in doc:
        return doc
    records = []
    for g in doc["runs"]:
        tags = {k: g[k] for k in ("date", "run") if k in g}
        if "copy_tbps" in g.get("meta", {}):  # a later run's own copy ceiling (the file's is its first run's)
            tags["run_copy_tbps"] = g["meta"]["copy_tbps"]
        records += [{**{c: v for c, v in zip(g["columns"], row) if v is not None}, **tags} for row in g["rows"]]
    return {**{k: v for k, v in doc.items() if k != "runs"}, "records": records}


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def md_table(header, rows) -> str:
    """A markdown table; header and each row are lists of cells (str() of each)."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def parse_shapes(text: str) -> list:
    """'MxNxK,...' -> [(M, N, K), ...] with positive sizes; ValueError otherwise."""
    try:
        shapes = [tuple(int(v) for v in part.lower().split("x")) for part in text.split(",")]
    except ValueError:
        shapes = []
    if not shapes or any(len(s) != 3 or min(s) < 1 for s in shapes):
        raise ValueError(f"expected MxNxK,... with positive sizes, got {text!r}")
    return shapes

