"""Write a registry with each module of jit_config.json as <module>_unsharded, its sources without
"shards": the build-time shards' A/B (docs/jit.md, "Cold builds").

    python3 bench/lab/unsharded_registry.py /tmp/unsharded.json
    AITER_LITE_JIT_CONFIG=/tmp/unsharded.json python3 -m aiter_lite build module_matmul_unsharded --backend cuda
"""
import json
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
registry = json.loads((root / "jit_config.json").read_text())
modules = {}
for name, entry in registry["modules"].items():
    entry["sources"] = {backend: [({k: v for k, v in s.items() if k != "shards"} if isinstance(s, dict) else s)
                                  for s in sources] for backend, sources in entry["sources"].items()}
    modules[f"{name}_unsharded"] = entry
Path(sys.argv[1]).write_text(json.dumps({"schema_version": 1, "modules": modules}, indent=1))
