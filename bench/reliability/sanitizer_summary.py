#!/usr/bin/env python3
"""Summarize sanitize.sh's compute-sanitizer logs, one line per tool x target: a report is ours when a
line of it before the host backtrace names aiter_lite (our kernels' namespace). initcheck runs
unfiltered (a filtered kernel's writes would not count as initialization), so there only our reports
count; the canary must be reported in an aiter_lite kernel.

usage: python3 sanitizer_summary.py LOG_DIR [--json FILE]; exit 1 unless every run is clean.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

PREFIX = "========="
NOT_REPORTS = ("ERROR SUMMARY", "COMPUTE-SANITIZER", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
               "Saved host backtrace", "Host Frame", "Device Frame", "Warning:", "This warning")


def parse_log(text: str) -> dict:
    # memcheck/initcheck/synccheck end with "ERROR SUMMARY: N errors"; racecheck with
    # "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)": count its errors and warnings.
    summary = re.findall(r"ERROR SUMMARY: (\d+) error", text)
    summary += [str(int(e) + int(w)) for e, w in
                re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)]
    reports, current = [], None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        body = line[len(PREFIX):]
        if body.strip() == "":
            continue
        if not body.startswith("  ") and not body.strip().startswith(NOT_REPORTS):
            current = {"header": body.strip(), "ours": "aiter_lite" in body, "in_host_trace": False}
            reports.append(current)
        elif current is not None:
            if "Saved host backtrace" in body:
                current["in_host_trace"] = True
            elif not current["in_host_trace"] and "aiter_lite" in body:
                current["ours"] = True
    ours = [r for r in reports if r["ours"]]
    return {"error_summary": int(summary[-1]) if summary else None, "reports": len(reports), "ours": len(ours),
            "first_ours": ours[0]["header"] if ours else "", "first_other": next(
                (r["header"] for r in reports if not r["ours"]), "")}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    log_dir = Path(argv[0])
    json_path = Path(argv[argv.index("--json") + 1]) if "--json" in argv else None
    rows, ok_all = [], True
    for san in sorted(log_dir.glob("*.san.log")):
        tool, _, target = san.name[: -len(".san.log")].partition("-")
        info = parse_log(san.read_text(errors="replace"))
        rc_file = san.with_name(san.name.replace(".san.log", ".rc"))
        rc = rc_file.read_text().strip() if rc_file.exists() else "?"
        app = san.with_name(san.name.replace(".san.log", ".app.log"))
        app_text = app.read_text(errors="replace") if app.exists() else ""
        sweep = next((l for l in reversed(app_text.splitlines()) if l.startswith("SWEEP")), "")
        n = info["error_summary"]
        if target == "canary":
            ok = info["ours"] > 0
            verdict = "detected (filter and tool work)" if ok else "NOT DETECTED: the check proves nothing"
        elif n is None:
            ok, verdict = False, "NO ERROR SUMMARY (timed out or crashed: rc " + rc + ")"
        elif tool == "initcheck":
            ok = info["ours"] == 0 and sweep.startswith("SWEEP") and " PASS" in sweep
            verdict = (f"{'clean' if info['ours'] == 0 else 'ERRORS'}: {info['ours']} in aiter_lite kernels "
                       f"({n} in all, {n - info['ours']} outside aiter_lite)")
        else:
            ok = n == 0 and sweep.startswith("SWEEP") and " PASS" in sweep
            verdict = f"{'clean' if n == 0 else 'ERRORS'}: {n} errors"
        if target != "canary" and not sweep:
            verdict += "; the sweep did not finish"
        ok_all &= ok
        rows.append({"tool": tool, "target": target, "ok": ok, "rc": rc, "verdict": verdict, **info,
                     "sweep": sweep})
        first = info["first_ours"] or (info["first_other"] if tool != "initcheck" else "")
        print(f"SANITIZE {tool:9s} {target:7s} {'ok  ' if ok else 'FAIL'} {verdict} | rc {rc} | "
              f"{sweep or '-'}" + (f" | first: {first[:120]}" if first and not ok else ""))
    if not rows:
        print(f"SANITIZE FAIL: no logs in {log_dir}")
        return 1
    print(f"SANITIZE {'PASS' if ok_all else 'FAIL'}: {sum(r['ok'] for r in rows)}/{len(rows)} runs clean")
    if json_path:
        json_path.write_text(json.dumps(rows, indent=1))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
