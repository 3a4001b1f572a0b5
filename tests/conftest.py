import os
import shutil
import subprocess
import sys
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY = Path(__file__).resolve().parent / "data" / "tiny"
WORKER = Path(__file__).resolve().parent / "jit_worker.py"


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory):
    """One cache for the whole session, so the real modules build once and every op test reuses them.
    A cache dir set by the caller (e.g. on a GPU machine) is kept."""
    if "AITER_LITE_CACHE_DIR" not in os.environ:
        os.environ["AITER_LITE_CACHE_DIR"] = str(tmp_path_factory.mktemp("aiter_lite_cache"))
    os.environ.setdefault("AITER_LITE_LOCK_DIR", str(tmp_path_factory.mktemp("aiter_lite_locks")))
    yield Path(os.environ["AITER_LITE_CACHE_DIR"])


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A private copy of the tiny pybind11 test module with its own cache and lock dirs."""
    src = tmp_path / "tiny"
    shutil.copytree(TINY, src)
    cache, locks = tmp_path / "cache", tmp_path / "locks"
    monkeypatch.setenv("AITER_LITE_CACHE_DIR", str(cache))
    monkeypatch.setenv("AITER_LITE_LOCK_DIR", str(locks))
    monkeypatch.delenv("AITER_LITE_REBUILD", raising=False)
    return TinyModule(src, cache, locks)


class TinyModule:
    def __init__(self, src: Path, cache: Path, locks: Path):
        self.src, self.cache, self.locks = src, cache, locks
        self.registry_path = src / "jit_config_test.json"

    def registry(self):
        from aiter_lite.jit import load_registry

        return load_registry([self.registry_path], self.src)

    def env(self, **extra):
        env = dict(os.environ, AITER_LITE_CACHE_DIR=str(self.cache), AITER_LITE_LOCK_DIR=str(self.locks),
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.update(extra)
        return env

    def start_worker(self, module="module_tiny", backend="cpu", **extra_env):
        return subprocess.Popen([sys.executable, str(WORKER), str(self.registry_path), module, backend],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(**extra_env))

    @staticmethod
    def result(proc, timeout=180):
        out, err = proc.communicate(timeout=timeout)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        assert lines, f"worker printed no result (rc={proc.returncode}):\n{out}\n{err}"
        return json.loads(lines[-1])

    def run_worker(self, module="module_tiny", **extra_env):
        return self.result(self.start_worker(module, **extra_env))

    def artifacts(self, module="module_tiny"):
        d = self.cache / module
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []
