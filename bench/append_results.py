#!/usr/bin/env python3
"""Append a benchmark run's records to a results file of the repository, each tagged with the run's
date and a label saying what the run was.

    python bench/append_results.py RUN.json bench/results/matmul_nvidia_h100_80gb_hbm3.json \\
        --run "closing issue-6 table (session 6)"

RUN.json is what bench_matmul.py --out (or another bench script with the same layout: device, date,
records) wrote on the GPU machine. The devices must match: a results file holds one GPU's records.
The file keeps bench_matmul.py's one-record-per-line layout.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_matmul import dump_json  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_json", type=Path, help="the run's JSON (device, date, records)")
    ap.add_argument("results", type=Path, help="the repository's results file (created if missing)")
    ap.add_argument("--run", required=True, help="label stored in every appended record")
    args = ap.parse_args(argv)

    run = json.loads(args.run_json.read_text())
    if args.results.exists():
        doc = json.loads(args.results.read_text())
        if doc.get("device") != run.get("device"):
            print(f"results: {args.results} holds {doc.get('device')!r} records, the run is from "
                  f"{run.get('device')!r}", file=sys.stderr)
            return 2
    else:
        doc = {k: v for k, v in run.items() if k != "records"} | {"records": []}
    tagged = [{**r, "date": r.get("date", run.get("date")), "run": args.run} for r in run["records"]]
    doc["records"].extend(tagged)
    args.results.write_text(dump_json(doc))
    print(f"appended {len(tagged)} records to {args.results} ({len(doc['records'])} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
