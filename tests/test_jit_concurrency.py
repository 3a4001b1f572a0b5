"""Many processes, killed builders, forced rebuilds and lock timeouts, on the tiny test module."""
import random
import shutil
import signal
import socket
import time

import filelock

import pytest

from aiter_lite.jit.key import compute_key
from aiter_lite.jit.lock import lock_path
from aiter_lite.jit.spec import make_spec
from aiter_lite.jit import read_env

pytestmark = pytest.mark.slow


def test_eight_processes_on_a_cold_cache_compile_once(tiny):
    procs = [tiny.start_worker() for _ in range(8)]
    results = [tiny.result(p) for p in procs]
    assert all(r["ok"] and r["add"] == 5 for r in results), results
    assert sum(r["built"] for r in results) == 1
    assert [a for a in tiny.artifacts() if a.startswith("cpu-")] and not any(
        a.startswith(".tmp-") for a in tiny.artifacts())


def test_rebuild_env_rebuilds_once_across_processes(tiny):
    assert tiny.run_worker()["built"]
    procs = [tiny.start_worker(AITER_LITE_REBUILD="1") for _ in range(6)]
    results = [tiny.result(p) for p in procs]
    assert all(r["ok"] for r in results)
    assert sum(r["built"] for r in results) == 1, "AITER_LITE_REBUILD=1 must rebuild once per key"
    assert not tiny.run_worker(AITER_LITE_REBUILD="0")["built"]


def test_sigkilled_builders_never_break_the_next_process(tiny):
    rng = random.Random(1234)
    # Calibrate: how long a cold start-and-build takes here, so the kills land inside builds.
    start = time.monotonic()
    assert tiny.run_worker()["built"]
    cold = time.monotonic() - start
    shutil.rmtree(tiny.cache / "module_tiny")
    trials, rebuilt_after_kill = 10, 0
    for trial in range(trials):
        victim = tiny.start_worker()
        time.sleep(rng.uniform(0.1, 0.9) * cold)  # random moments from start-up to the final link
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        start = time.monotonic()
        result = tiny.run_worker()  # must neither hang nor load a broken module
        assert result["ok"] and result["add"] == 5, (trial, result)
        assert time.monotonic() - start < 120
        rebuilt_after_kill += result["built"]
        leftovers = [a for a in tiny.artifacts() if a.startswith(".tmp-")]
        assert not leftovers, (trial, leftovers)
        # Start every trial from a cold cache so each kill lands in a build again.
        for art in tiny.artifacts():
            if art.startswith("cpu-"):
                shutil.rmtree(tiny.cache / "module_tiny" / art)
    assert rebuilt_after_kill >= trials // 2, "most kills should land inside a build"
    # A final process sees no leftovers from any trial.
    assert tiny.run_worker()["ok"]
    assert not [a for a in tiny.artifacts() if a.startswith(".tmp-")]


def test_lock_timeout_names_the_lock_file(tiny):
    spec = make_spec(tiny.registry().get("module_tiny"), "cpu", read_env())
    path = lock_path(tiny.locks, "module_tiny", "cpu", compute_key(spec))
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = filelock.FileLock(str(path))
    with holder:
        start = time.monotonic()
        result = tiny.run_worker(AITER_LITE_LOCK_TIMEOUT="1.5")
        waited = time.monotonic() - start
    assert not result["ok"] and result["type"] == "LockTimeout"
    assert str(path) in result["error"] and "AITER_LITE_LOCK_TIMEOUT" in result["error"]
    assert waited < 60
    assert path.exists(), "lock files are never unlinked"
    assert tiny.run_worker()["ok"], "after the holder releases, the build proceeds"


def test_two_nodes_sharing_a_cache_never_break_each_others_builds(tiny):
    """Simulated nodes: one cache dir, a lock dir per node, so one builder per node runs at once. A
    builder must not remove the other node's live build dir as a dead one (same host name), and the
    second publish must give way to the first."""
    for trial in range(2):
        procs = [tiny.start_worker(AITER_LITE_LOCK_DIR=str(tiny.locks / f"node{i % 2}")) for i in range(6)]
        results = [tiny.result(p) for p in procs]
        assert all(r["ok"] and r["add"] == 5 for r in results), results
        assert 1 <= sum(r["built"] for r in results) <= 2, results
        arts = tiny.artifacts()
        assert len([a for a in arts if a.startswith("cpu-")]) == 1, arts
        assert not [a for a in arts if a.startswith((".tmp-", ".new-", "failed-"))], arts
        shutil.rmtree(tiny.cache / "module_tiny")


def test_stale_build_dir_cleanup_spares_a_live_builder(tiny):
    """remove_stale_build_dirs removes a dead builder's dir but not one whose builder holds its lock."""
    from aiter_lite.jit.cache import ModuleCache

    spec = make_spec(tiny.registry().get("module_tiny"), "cpu", read_env())
    key = compute_key(spec)
    live = ModuleCache(tiny.cache, "module_tiny", "cpu", key)
    live.ensure_root()
    live_dir = live.new_build_dir()  # this process holds its builder lock
    dead = ModuleCache(tiny.cache, "module_tiny", "cpu", key)
    dead_dir = dead.new_build_dir()
    dead._release_builder_lock()  # as if its builder had died
    legacy_dir = live_dir.with_name(live_dir.name + "x")  # a build dir without a lock file (older versions)
    legacy_dir.mkdir()
    cleaner = ModuleCache(tiny.cache, "module_tiny", "cpu", key)
    assert cleaner.remove_stale_build_dirs() == 2
    assert live_dir.is_dir() and not dead_dir.exists() and not legacy_dir.exists()
    live._release_builder_lock()
    assert cleaner.remove_stale_build_dirs() == 1 and not live_dir.exists()


def test_stale_build_dir_cleanup_spares_a_builder_still_staging(tiny):
    """A .new-* dir without a locked lock file is a live builder inside new_build_dir (before its
    flock and rename): the cleanup of another node must leave it alone unless it is old."""
    import os
    import time

    from aiter_lite.jit.cache import STAGING_GRACE_S, ModuleCache

    spec = make_spec(tiny.registry().get("module_tiny"), "cpu", read_env())
    key = compute_key(spec)
    cache = ModuleCache(tiny.cache, "module_tiny", "cpu", key)
    cache.ensure_root()
    staging = cache.module_dir / f".new-cpu-{key}-{socket.gethostname()}-{os.getpid()}-abc"
    staging.mkdir()
    assert cache.remove_stale_build_dirs() == 0 and staging.is_dir()
    old = time.time() - STAGING_GRACE_S - 10
    os.utime(staging, (old, old))
    assert cache.remove_stale_build_dirs() == 1 and not staging.exists()
