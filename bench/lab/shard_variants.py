"""Write a registry with variants of a module (--module, default module_causal_conv1d) that differ only in their build-time shards
(docs/jit.md, "Shards"), for cold-build A/Bs on one host: <module>_unsharded (no "shards"), and
<module>_<label> for each --variant label:file=N,file=N (file: the source's stem).

    python3 bench/lab/shard_variants.py /tmp/variants.json --variant s8:causal_conv1d_bwd_channel_last=8
    AITER_LITE_JIT_CONFIG=/tmp/variants.json python3 -m aiter_lite build module_causal_conv1d_s8 --backend cuda
"""
import argparse
import json
from pathlib import Path

root = Path(__file__).resolve().parents[2]
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--module", default="module_causal_conv1d")
ap.add_argument("--variant", action="append", default=[], help="label:stem=N,stem=N (the cuda sources)")
args = ap.parse_args()

entry = json.loads((root / "jit_config.json").read_text())["modules"][args.module]


def with_shards(shards: dict) -> dict:
    def source(s):  # keeps the entry's other keys (archs); "shards" as asked, none for 1
        entry = dict(s) if isinstance(s, dict) else {"path": s}
        entry.pop("shards", None)
        n = shards.get(Path(entry["path"]).stem, 1)
        if n > 1:
            entry["shards"] = n
        return entry if len(entry) > 1 else entry["path"]
    return {**entry, "sources": {**entry["sources"], "cuda": [source(s) for s in entry["sources"]["cuda"]]}}


modules = {f"{args.module}_unsharded": with_shards({})}
for v in args.variant:
    label, spec = v.split(":", 1)
    modules[f"{args.module}_{label}"] = with_shards({k: int(n) for k, n in (kv.split("=") for kv in spec.split(","))})
Path(args.out).write_text(json.dumps({"schema_version": 1, "modules": modules}, indent=1))
