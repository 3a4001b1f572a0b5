"""bench/lab/make_base_module.py: the exported sources and the registry entry it writes load as a module
beside the package's own (no build; the A/B runs on the GPU machine)."""
import subprocess
import sys
from pathlib import Path

from aiter_lite.jit.registry import load_registry

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "lab" / "make_base_module.py"


def run_script(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=str(REPO),
                          timeout=120)


def test_base_module_registers_exported_sources(tmp_path):
    dest = tmp_path / "base"
    r = run_script("--rev", "HEAD", "--module", "module_matmul", "--dest", str(dest))
    assert r.returncode == 0, r.stderr
    registry = load_registry([REPO / "jit_config.json", dest / "jit_base.json"], REPO / "csrc")
    entry = registry.get("module_matmul_base")
    sources = [s.path for backend in entry.sources.values() for s in backend]
    assert sources and all(p.is_file() and dest.resolve() in p.parents for p in sources)
    assert all(dest.resolve() in d.parents for d in entry.include_dirs)
    # The export is the revision's tree: every exported kernel source matches git's copy at HEAD.
    for p in sources:
        rel = p.relative_to(dest.resolve()).as_posix()
        at_head = subprocess.run(["git", "-C", str(REPO), "show", f"HEAD:{rel}"], capture_output=True,
                                 check=True).stdout
        assert p.read_bytes() == at_head, rel


def test_unknown_module_is_refused(tmp_path):
    r = run_script("--module", "module_nonexistent", "--dest", str(tmp_path / "base"))
    assert r.returncode == 2
    assert "--module" in r.stderr and "module_nonexistent" in r.stderr
