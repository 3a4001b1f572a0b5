#!/usr/bin/env python3
"""Register a module as it was at another git revision, for an A/B of a kernel change in one run.

Exports csrc/ at REV (git archive) under DEST and writes DEST/jit_base.json: the module's registry
entry from REV's jit_config.json, renamed <module>_base, its {csrc} paths pointing at the export.
DEST goes to the GPU machine with the run (e.g. under the carried .peers/), and the run adds it to
AITER_LITE_JIT_CONFIG; both builds then time in the same interleaved rounds:

    python bench/lab/make_base_module.py --rev HEAD --module module_matmul --dest .peers/base
    # on the GPU machine:
    AITER_LITE_JIT_CONFIG=$PWD/.peers/base/jit_base.json python bench/lab/probe_wgmma_configs.py \\
        --modules module_matmul_base,module_matmul --shapes 4096x4096x4096
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def export_csrc(rev: str, dest: Path) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "csrc"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="HEAD", help="git revision of the base sources (default HEAD)")
    ap.add_argument("--module", default="module_matmul", help="registry entry to copy")
    ap.add_argument("--dest", type=Path, default=REPO / ".peers" / "base", help="output directory (replaced)")
    args = ap.parse_args(argv)

    config = json.loads(subprocess.run(["git", "-C", str(REPO), "show", f"{args.rev}:jit_config.json"],
                                       check=True, capture_output=True, text=True).stdout)
    entry = config["modules"].get(args.module)
    if entry is None:
        print(f"--module: {args.module!r} is not in jit_config.json at {args.rev}", file=sys.stderr)
        return 2
    if args.dest.exists():
        shutil.rmtree(args.dest)
    args.dest.mkdir(parents=True)
    export_csrc(args.rev, args.dest)
    # Relative paths in a registry resolve against the registry file's directory.
    text = json.dumps(entry).replace("{csrc}", "csrc")
    base = dict(json.loads(text), description=f"{args.module} at {args.rev}: the base of an A/B")
    registry = {"schema_version": config["schema_version"], "modules": {f"{args.module}_base": base}}
    (args.dest / "jit_base.json").write_text(json.dumps(registry, indent=1) + "\n")
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    print(f"{args.module}_base ({rev}) registered in {args.dest / 'jit_base.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
