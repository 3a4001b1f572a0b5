#!/usr/bin/env python3
"""Append a suite's run to a results file of the repository, tagged with the run's date and a label saying
what the run was (bench/records.py describes both layouts; a results file holds one GPU's runs).

    python bench/append_results.py FILES_AT/3_matmul.json bench/results/matmul_nvidia_h100_80gb_hbm3.json \\
        --run "closing issue-6 table (session 6)"
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_json", type=Path, help="the run's JSON (device, date, records)")
    ap.add_argument("results", type=Path, help="the repository's results file (created if missing)")
    ap.add_argument("--run", required=True, help="label of the run")
    args = ap.parse_args(argv)
    run = json.loads(args.run_json.read_text())
    if args.results.exists():
        doc = json.loads(args.results.read_text())
        if doc.get("device") != run.get("device"):
            print(f"results: {args.results} holds {doc.get('device')!r} records, the run is from "
                  f"{run.get('device')!r}", file=sys.stderr)
            return 2
        records.append(doc, run, args.run)
    else:
        doc = records.to_results(run, args.run)
    args.results.write_text(records.dump_results(doc))
    total = sum(len(g["rows"]) for g in doc["runs"])
    print(f"appended {len(run['records'])} records to {args.results} ({total} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
