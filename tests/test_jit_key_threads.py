"""The cache key's host facts read the same from threads that start together (the CLI's parallel prebuild).

sysconfig fills its config vars lazily, and on CPython 3.11 a thread that asks while another fills them can see
them half filled: EXT_SUFFIX read as None. A prebuild once keyed module_causal_conv1d with "cpython-311 None" while
writing the right value into its key_inputs.json, so the op call of the next process built the module again
(tests/test_jit_prebuild.py caught it on CI, one run in five). Each fresh process below starts threads that read
the host facts at once, as build_many's threads do."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_RACE = textwrap.dedent("""
    import threading
    from aiter_lite.jit import toolchain
    start = threading.Barrier(4)
    seen = []
    def ask(f):
        start.wait()
        seen.append(str(f()))
    fs = [toolchain.python_abi, toolchain.python_includes] * 2
    threads = [threading.Thread(target=ask, args=(f,)) for f in fs]
    for t in threads: t.start()
    for t in threads: t.join()
    print(sorted(v for v in seen if "None" in v))
""")


def test_python_abi_and_includes_agree_across_threads():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    bad = []
    for _ in range(40):  # a fresh process each: sysconfig not filled yet, as in the CLI
        r = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=300, cwd=REPO,
                           env=env)
        assert r.returncode == 0, r.stderr
        if r.stdout.strip() != "[]":
            bad.append(r.stdout.strip())
    assert not bad, "a thread read sysconfig half filled: " + "; ".join(bad[:3])
