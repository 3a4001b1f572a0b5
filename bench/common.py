"""What the GPU suites share: timers (CUDA events, L2 flushed, medians: STYLE.md (c)), the copy ceiling,
the peers, the torch reference of the conv, and the host time of back-to-back calls."""
from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _p in (REPO, REPO / "bench"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def need_cuda(name: str) -> None:
    if not torch.cuda.is_available():
        raise SystemExit(f"{name}: needs a CUDA GPU")


def make_timer(warmup_ms: float = 25, rep_ms: float = 100):
    """(time_us(fn), its name): triton's do_bench median (CUDA events, L2 flushed)."""
    from triton.testing import do_bench

    return lambda fn: do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median") * 1e3, "triton.testing.do_bench"


_FLUSH = []


def capture_graph(fn) -> "torch.cuda.CUDAGraph":
    """fn captured in a CUDA graph, after two warm-up calls on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def graph_time_us(fn, reps: int = 30) -> float:
    """Median GPU time of fn replayed from a CUDA graph (no host overhead), L2 flushed before each replay."""
    if not _FLUSH:
        _FLUSH.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    g = capture_graph(fn)
    times = []
    for _ in range(reps):
        _FLUSH[0].random_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def copy_tbps(time_us, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth, bytes read + written, with the given timer."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    return 2 * nbytes / time_us(lambda: dst.copy_(src)) / 1e6


def same_bytes_copy_us(moved_bytes: int, reps: int = 30) -> float:
    """GPU time (graph_time_us) of a device copy moving moved_bytes in all, half read and half written: what the
    hardware does with the bytes a kernel must move, timed in the same run (fresh random fp32, never zeros)."""
    src = torch.empty(max(moved_bytes // 8, 1), device="cuda").normal_()
    dst = torch.empty_like(src)
    return graph_time_us(lambda: dst.copy_(src), reps)


def host_us(fn, n: int = 2000, rounds: int = 5, sync: bool = True) -> float:
    """Time per call of n back-to-back calls, the fastest of rounds (as timeit does); sync: the final
    synchronize counts (wall time), else only the enqueue."""
    for _ in range(50):
        fn()
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if sync:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    torch.cuda.synchronize()
    return best


def set_torch_tf32(enabled: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = enabled


def load_peers(root=None, skip: bool = False):
    """(causal_conv1d, fla's causal_conv1d, notes): the peers bench/gpu.sh installs from the carried .peers
    (bench/peer_cache.py); both None, with a note, where they do not import. root: unused (kept for callers)."""
    if skip:
        return None, None, ["peers skipped"]
    try:
        import causal_conv1d as dao
        from fla.modules.causal_conv1d import causal_conv1d as fla
    except Exception as e:  # noqa: BLE001 - the suites run without peers, and say so
        return None, None, [f"peers not importable (bench/gpu.sh installs them from .peers): {type(e).__name__}: {e}"]
    return dao, fla, [f"peers: causal-conv1d from {Path(dao.__file__).parent}, fla"]


def fla_conv(fla):
    """fla's conv on a [B, D, L] view of [B, L, D] storage, returning [B, L, D]."""
    def run(x, w, b):
        y = fla(x=x.transpose(1, 2), weight=w, bias=b, activation="silu")
        return y[0] if isinstance(y, tuple) else y
    return run


def torch_conv(x, w, b):
    """The conv in torch: F.conv1d with groups=D, the causal slice, SiLU."""
    return F.silu(F.conv1d(x, w.unsqueeze(1), b, padding=w.shape[1] - 1, groups=x.shape[1])[..., : x.shape[-1]])


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.float(), ref.float()
    if not bool(torch.isfinite(out).all()):
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))
