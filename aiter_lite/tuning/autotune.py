"""Opt-in autotuning of the matmul tile config (AITER_LITE_AUTOTUNE=1).

With the variable set, the first aiter_lite.matmul call with config=-1 for a key

    (device name, arch, config path, variant, dtype, operand layout class, M/N/K/batch buckets)

times the planner's first few launchable table configs (table_order of planner.rank_table_configs,
AITER_LITE_AUTOTUNE_TOP_K of them, default 4), every config that fits of a kernel family the call may
run but the planner does not model (the Hopper wgmma_16 / wgmma_tf32 configs: variant "wgmma", and
"auto" for fp16/bf16 and tf32 on sm_90), and the kernel's own choice (config -1, so that tuning never ends slower than not
tuning) on fresh random data shaped and laid out like the call, with CUDA events, keeps the fastest
(-1 on a tie), and records it in a JSON file under the JIT cache root
(<cache>/tuning/matmul_tuned_configs.json, one section per device name). Later calls with the same key
take it from an in-process dict; later processes read it from the file. Without the variable nothing
changes: config=-1 goes to the kernel, which picks its own default.

Buckets: M, N, K and the batch rounded up to powers of two (planner.bucket), so 3000x3000x3000 and
4096x4096x4096 share an entry; the first shape of a bucket decides for all of it.

The file is written under a file lock (jit/lock.py, one per file, in the lock dir), by re-reading it, merging the
entry and replacing it atomically (temp file + os.replace), so concurrent writers lose no entry and a
reader never sees half a file. A corrupt file is ignored with a warning and rewritten by the next
tuning. An entry whose config index no longer names the same tile (the table changed) is ignored and
tuned again. Nothing is tuned while a CUDA graph is being captured (config -1 is used then).

Pure Python at import; torch is imported only to make data and time kernels.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import statistics
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from ..errors import AiterLiteError
from ..jit import lock
from .matmul_configs import MATMUL_CONFIGS, PATHS, b_rows_off_sector, path_for, tc_config_on_sm90
from .planner import PATH_OF_DTYPE, bucket, rank_table_configs, table_order

logger = logging.getLogger(__name__)

__all__ = ["TuneKey", "TunedConfigStore", "Autotuner", "enabled", "select_config", "get_tuner", "configure", "reset",
           "layout_class", "FILE_NAME", "SCHEMA", "DEFAULT_TOP_K", "DEFAULT_REPS"]

FILE_NAME = "matmul_tuned_configs.json"
SCHEMA = 1
DEFAULT_TOP_K = 4
DEFAULT_REPS = 5

# Variants the tuner knows the config path of; any other variant (a kernel family added later) is
# never tuned: its calls keep config -1.
_VARIANT_PATHS = ("auto", "tiled", "tensor_core", "wgmma")
_PLANNER_PATHS = frozenset(PATH_OF_DTYPE.values())  # the config paths the planner models
_WGMMA = "wgmma_16"  # the Hopper kernel family (csrc/kernels/matmul_wgmma.cuh); the planner does not model it
_WGMMA_TF32 = "wgmma_tf32"  # its tf32 sibling (csrc/kernels/matmul_wgmma_tf32.cuh)
_TC_VEC_BYTES = 16  # the tensor-core kernels' cp.async width (a layout that misses it runs SIMT)


# ---- keys ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TuneKey:
    device: str     # torch.cuda.get_device_name, e.g. "NVIDIA H100 80GB HBM3"
    arch: str       # "sm_90", "gfx942"
    path: str       # config path of MATMUL_CONFIGS (simt, tensor_core_16, tensor_core_tf32)
    variant: str    # auto | tiled | tensor_core
    dtype: str      # planner dtype: fp16 | bf16 | fp32 | tf32
    layout: str     # layout_class of (a, b)
    m: int          # buckets (powers of two)
    n: int
    k: int
    batch: int

    @property
    def entry(self) -> str:
        """The entry's name inside the device's section of the file."""
        return (f"{self.path}/{self.variant}/{self.dtype}/{self.layout}/{self.arch}/"
                f"m{self.m}_n{self.n}_k{self.k}_b{self.batch}")


def _operand_class(stride_mn: int, stride_k: int, a_operand: bool) -> str:
    # A [M, K]: "n" when K-contiguous (row-major), "t" when M-contiguous (a transposed view).
    # B [K, N]: "n" when N-contiguous (row-major), "t" when K-contiguous (w.t() of nn.Linear).
    if a_operand:
        return "n" if stride_k == 1 else ("t" if stride_mn == 1 else "x")
    return "n" if stride_mn == 1 else ("t" if stride_k == 1 else "x")


def layout_class(a_stride: Sequence[int], b_stride: Sequence[int]) -> str:
    """'nn', 'nt', 'tn', 'tt' (or 'x' for an operand with no unit stride) from the strides of the 3-D
    [batch, M, K] and [batch, K, N] operands as launched."""
    return (_operand_class(a_stride[1], a_stride[2], True) + _operand_class(b_stride[2], b_stride[1], False))


def _b_lines_off_sector(b, m: int) -> bool:
    """b_rows_off_sector for a 3-D [batch, K, N] 16-bit B as launched (N- or K-major)."""
    if b.stride(2) == 1:
        return b_rows_off_sector(m, b.shape[1], b.stride(1))
    return b.stride(1) == 1 and b_rows_off_sector(m, b.shape[2], b.stride(2))


def _tc_aligned(t, elem_bytes: int) -> bool:
    """The tensor-core kernels' 16-byte rule for one 3-D operand (see csrc/kernels/matmul.cu): the
    pointer and every non-unit stride of a dim longer than 1 a multiple of 16 bytes."""
    if t.data_ptr() % _TC_VEC_BYTES:
        return False
    vec = _TC_VEC_BYTES // elem_bytes
    return all(s % vec == 0 for s, n in zip(t.stride(), t.shape) if s != 1 and n > 1)


# ---- the file -----------------------------------------------------------------------------------


def _families(key: "TuneKey") -> tuple:
    """The config paths a call of this key can be given a config of (csrc/kernels/matmul.cu: under
    variant auto an explicit wgmma_16 config selects the Hopper kernel for fp16/bf16, a tensor_core_16
    one mma.sync; the kernel's own choice there is wgmma where the layout allows; likewise wgmma_tf32 /
    tensor_core_tf32 for fp32 with TF32 allowed)."""
    if key.variant == "auto" and key.arch == "sm_90":
        if key.path == "tensor_core_16" and _WGMMA in PATHS:
            return (key.path, _WGMMA)
        if key.path == "tensor_core_tf32" and _WGMMA_TF32 in PATHS:
            return (key.path, _WGMMA_TF32)
    return (key.path,)


def _valid_entry(rec, families: Sequence[str]) -> Optional[int]:
    """The config of a stored entry if it still names the same tile of the table (or is -1, the
    kernel's own choice), else None."""
    if not isinstance(rec, dict):
        return None
    cfg, tile = rec.get("config"), rec.get("tile")
    if cfg == -1 and tile is None:
        return -1
    if not isinstance(cfg, int) or isinstance(cfg, bool) or not 0 <= cfg < len(MATMUL_CONFIGS):
        return None
    c = MATMUL_CONFIGS[cfg]
    if c.path not in families or not isinstance(tile, list) or tile != list(c[1:]):
        return None
    return cfg


class TunedConfigStore:
    """The tuned-config JSON: {"schema": 1, "devices": {device name: {entry: record}}}.

    `load()` never raises for a missing or corrupt file (a corrupt one is logged and treated as empty);
    `record()` merges one entry under the lock and replaces the file atomically. A file that cannot be
    written is logged; the caller keeps its result in memory."""

    def __init__(self, path: Path, lock_dir: Path, lock_timeout: Optional[float] = None):
        self.path, self.lock_dir, self.lock_timeout = Path(path).absolute(), Path(lock_dir), lock_timeout
        self._lock_key = hashlib.sha256(str(self.path).encode()).hexdigest()[:16]  # one lock per file

    def _read(self) -> Dict[str, Dict[str, dict]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except OSError as e:
            logger.warning("cannot read tuned matmul configs %s: %s", self.path, e)
            return {}
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("devices"), dict):
                raise ValueError(f"not a schema-{SCHEMA} tuned-config file")
            devices = {name: sec for name, sec in doc["devices"].items() if isinstance(sec, dict)}
        except ValueError as e:
            logger.warning("ignoring corrupt tuned matmul configs %s (%s); the next tuning rewrites it",
                           self.path, e)
            return {}
        return devices

    def load(self, device: Optional[str] = None) -> Dict:
        """Every device's entries, or one device's ({} when absent)."""
        devices = self._read()
        return devices if device is None else dict(devices.get(device, {}))

    def record(self, device: str, entry: str, rec: dict) -> bool:
        """Add or replace one entry; True when the file was written."""
        try:
            with lock.hold(self.lock_dir, "tuned_configs", "matmul", self._lock_key, what=f"recording {entry}",
                           timeout=self.lock_timeout):
                devices = self._read()
                devices.setdefault(device, {})[entry] = rec
                self._write({"schema": SCHEMA, "devices": devices})
            return True
        except (OSError, AiterLiteError) as e:
            logger.warning("could not record tuned matmul config %s in %s: %s (kept for this process only)",
                           entry, self.path, e)
            return False

    def _write(self, doc: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if tmp.exists():
                tmp.unlink()


# ---- the tuner ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    arch: str
    model: object        # hardware.DeviceModel the planner ranks with
    hip: bool = False


def _cuda_device_info(index: int) -> DeviceInfo:
    import torch  # noqa: PLC0415

    from .hardware import device_from_torch

    props = torch.cuda.get_device_properties(index)
    hip = bool(torch.version.hip)
    arch = str(getattr(props, "gcnArchName", "")).split(":")[0] if hip else f"sm_{props.major}{props.minor}"
    return DeviceInfo(str(props.name), arch, device_from_torch(index), hip)


def cuda_event_timer(fns: Sequence[Callable[[], None]], reps: int) -> List[float]:
    """Median microseconds of each fn: one warm-up call each, then `reps` rounds that call every fn once
    (interleaved, so clock drift hits all alike), each call between two CUDA events on the current stream."""
    import torch  # noqa: PLC0415

    for fn in fns:
        fn()
    events = []
    for _ in range(reps):
        for i, fn in enumerate(fns):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            events.append((i, start, stop))
    torch.cuda.synchronize()
    times: List[List[float]] = [[] for _ in fns]
    for i, start, stop in events:
        times[i].append(start.elapsed_time(stop) * 1e3)
    return [statistics.median(t) for t in times]


def _graph_capturing() -> bool:
    import torch  # noqa: PLC0415

    return bool(torch.cuda.is_current_stream_capturing())


def _fresh_like(t):
    """Random normal data (never zeros) with t's shape, dtype and memory order: the same unit-stride
    dim, a broadcast batch (stride 0) kept broadcast. Leading dims are packed (no padding)."""
    import torch  # noqa: PLC0415

    batch, rows, cols = t.shape
    lead = 1 if (t.stride(0) == 0 and batch > 1) else batch
    transposed = t.stride(-1) != 1 and t.stride(-2) == 1
    shape = (lead, cols, rows) if transposed else (lead, rows, cols)
    x = torch.randn(shape, device=t.device, dtype=torch.float32).to(t.dtype)
    x = x.transpose(1, 2) if transposed else x
    return x.expand(batch, rows, cols) if lead != batch else x


RunFn = Callable[[object, object, object, int], None]  # run(a, b, out, config): one launch


class Autotuner:
    """Keys -> tuned configs: an in-process dict in front of a TunedConfigStore, and the tuning itself.
    `device_info(index)` and `timer(fns, reps)` are parameters so that the logic runs without a GPU
    (tests pass fakes)."""

    def __init__(self, store: TunedConfigStore, *, top_k: int = DEFAULT_TOP_K, reps: int = DEFAULT_REPS,
                 device_info: Callable[[int], DeviceInfo] = _cuda_device_info,
                 timer: Callable[[Sequence[Callable[[], None]], int], List[float]] = cuda_event_timer,
                 capturing: Callable[[], bool] = _graph_capturing):
        if top_k < 1 or reps < 1:
            raise ValueError(f"top_k and reps must be positive, got {top_k}, {reps}")
        self.store, self.top_k, self.reps = store, top_k, reps
        self._device_info, self._timer, self._capturing = device_info, timer, capturing
        self._devices: Dict[int, DeviceInfo] = {}
        self._by_call: Dict[tuple, int] = {}   # exact call signature -> config (the hot path)
        self._by_key: Dict[TuneKey, int] = {}  # bucketed key -> config (tuned here or read from the file)
        self._lock = threading.Lock()
        self.tunings = 0  # how many times this tuner timed configs (tests and logs)

    # -- keys -------------------------------------------------------------------------------------
    def device(self, index: int) -> DeviceInfo:
        info = self._devices.get(index)
        if info is None:
            info = self._devices[index] = self._device_info(index)
        return info

    def key(self, a, b, allow_tf32: bool, variant: str) -> Optional[TuneKey]:
        """The key of a call (3-D operands as launched), or None when it has no tunable config: an
        unknown variant, a tensor-core path whose layout falls back to the SIMT kernel's default (or
        HIP, where tensor-core variants run it), a path without table configs."""
        if variant not in _VARIANT_PATHS:
            return None
        dt = str(a.dtype)[len("torch."):]
        if dt == "float32":
            dtype, elem = ("tf32" if allow_tf32 else "fp32"), 4
        elif dt in ("float16", "bfloat16"):
            dtype, elem = ("fp16" if dt == "float16" else "bf16"), 2
        else:
            return None
        try:  # the mma.sync family for auto: _families adds the Hopper one where auto may run it
            path = path_for(dt, allow_tf32, variant)
        except ValueError:  # a call the kernel refuses: let it say so
            return None
        if path not in PATHS:
            return None
        if path == "simt" and dtype == "tf32":
            dtype = "fp32"  # the SIMT kernel is strict fp32 whatever allow_tf32 says
        info = self.device(a.get_device())
        layout = layout_class(a.stride(), b.stride())
        if path != "simt" and (info.hip or "x" in layout or not (_tc_aligned(a, elem) and _tc_aligned(b, elem))):
            return None
        batch, m, k = a.shape
        if elem == 2 and _b_lines_off_sector(b, m):
            layout += "+off16"  # the Hopper planner treats these apart (2 x 2 clusters): so do the buckets
        return TuneKey(info.name, info.arch, path, variant, dtype, layout, bucket(m), bucket(b.shape[2]),
                       bucket(k), bucket(batch))

    # -- the hot path -----------------------------------------------------------------------------
    def select(self, a, b, out, allow_tf32: bool, variant: str, run: RunFn) -> int:
        """The config to launch for this call: a dict lookup after the first call of a key."""
        call = (a.get_device(), variant, allow_tf32, a.dtype, a.shape, a.stride(), b.shape, b.stride(),
                a.data_ptr() % _TC_VEC_BYTES, b.data_ptr() % _TC_VEC_BYTES)
        cfg = self._by_call.get(call)
        if cfg is None:
            key = self.key(a, b, allow_tf32, variant)
            cfg = -1 if key is None else self._config_for(key, a, b, out, run)
            if cfg is None:  # not tuned (graph capture): decide again next time
                return -1
            if len(self._by_call) >= 65536:  # many distinct shapes: start over (the keys stay)
                self._by_call.clear()
            self._by_call[call] = cfg
        return cfg

    # -- misses -----------------------------------------------------------------------------------
    def _config_for(self, key: TuneKey, a, b, out, run: RunFn) -> Optional[int]:
        with self._lock:
            cfg = self._by_key.get(key)
            if cfg is not None:
                return cfg
            # The file again (not a copy read at start-up): another process may have tuned this key.
            cfg = _valid_entry(self.store.load(key.device).get(key.entry), _families(key))
            if cfg is None:
                if self._capturing():
                    return None
                cfg = self._tune(key, self.device(a.get_device()).model, a, b, out, run)
            self._by_key[key] = cfg
            return cfg

    def candidates(self, key: TuneKey, model, m: int, n: int, k: int, batch: int) -> tuple:
        """(planner's, others): the planner's first top_k launchable table configs of the key's path
        for this shape, ranked on the device model `model`; and every config that fits the device of
        the families the call may run that the planner does not model (the Hopper wgmma kernel)."""
        planner: List[int] = []
        if key.path in _PLANNER_PATHS:
            ests = rank_table_configs(m, n, k, key.dtype, model, path=key.path, batch=batch)
            ranked = [e.config.index for e in table_order(ests)]
            if key.arch == "sm_90":  # the sm_90a image holds only these tensor-core configs
                ranked = [i for i in ranked if tc_config_on_sm90(i)]
            planner = ranked[:self.top_k]
        elem = 2 if key.dtype in ("fp16", "bf16") else 4
        # A config that loads only a_rows rows of A serves no more rows; a_rows is a power of two, as the M buckets'
        # bounds are, so one tuned on a bucket's first shape serves the whole bucket.
        others = [c.index for c in MATMUL_CONFIGS if c.path in _families(key) and c.path not in _PLANNER_PATHS
                  and c.smem_bytes(elem) <= model.smem_per_block and not (c.a_rows and m > c.a_rows)]
        return planner, others

    def _tune(self, key: TuneKey, model, a, b, out, run: RunFn) -> int:
        batch, m, k = a.shape
        n = b.shape[2]
        planner, others = self.candidates(key, model, m, n, k, batch)
        cands = planner + others
        if not cands:
            logger.info("autotune matmul %s on %s: no launchable config, using the default", key.entry, key.device)
            return -1
        try:
            fa, fb = _fresh_like(a), _fresh_like(b)
            fo = out.new_empty(out.shape)
        except RuntimeError:  # out of memory for a copy: time on the call's own tensors
            fa, fb, fo = a, b, out
        ok, times = [], []
        for cfg in [-1] + cands:  # drop a config the kernel refuses (it should not: the planner checked)
            try:
                run(fa, fb, fo, cfg)
                ok.append(cfg)
            except (ValueError, RuntimeError) as e:
                logger.warning("autotune matmul %s: config %d failed: %s", key.entry, cfg, e)
        if ok:
            times = self._timer([lambda c=c: run(fa, fb, fo, c) for c in ok], self.reps)
        self.tunings += 1
        if not ok:
            return -1
        us = dict(zip(ok, times))
        best = min(ok, key=lambda c: (us[c], ok.index(c)))  # ties: the default, then the planner's order
        logger.info("autotune matmul %s on %s (tuned on %dx%dx%dx%d): config %d %.1f us (-1 is the kernel's own "
                    "choice; planner's order %s); timed %s", key.entry, key.device, batch, m, n, k, best, us[best],
                    planner, ", ".join(f"{c}: {us[c]:.1f}" for c in ok))
        rec = {"config": best, "tile": None if best == -1 else list(MATMUL_CONFIGS[best][1:]),
               "shape": [m, n, k, batch], "us": {str(c): round(us[c], 2) for c in ok}, "planner_order": planner,
               "candidates": cands,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        self.store.record(key.device, key.entry, rec)
        return best


# ---- module state (what aiter_lite.matmul calls) ------------------------------------------------

_enabled: Optional[bool] = None
_tuner: Optional[Autotuner] = None
_state_lock = threading.Lock()


def enabled() -> bool:
    """AITER_LITE_AUTOTUNE, read once (reset() reads it again)."""
    global _enabled
    on = _enabled
    if on is None:
        from ..jit.env import read_env

        on = _enabled = read_env().autotune
    return on


def get_tuner() -> Autotuner:
    """The process's Autotuner over <cache>/tuning/matmul_tuned_configs.json (created on first use)."""
    global _tuner
    tuner = _tuner
    if tuner is None:
        with _state_lock:
            if _tuner is None:
                from ..jit.env import read_env

                env = read_env()
                store = TunedConfigStore(env.cache_dir / "tuning" / FILE_NAME, env.lock_dir, env.lock_timeout)
                _tuner = Autotuner(store, top_k=env.autotune_top_k or DEFAULT_TOP_K)
            tuner = _tuner
    return tuner


def select_config(a, b, out, allow_tf32: bool, variant: str, run: RunFn) -> int:
    """The tuned config for a matmul call with config=-1 (3-D CUDA operands as launched)."""
    return get_tuner().select(a, b, out, allow_tf32, variant, run)


def configure(enabled: Optional[bool] = None, tuner: Optional[Autotuner] = None) -> None:
    """Set the switch (instead of AITER_LITE_AUTOTUNE) and/or the process's tuner (e.g. one over a
    private file): benchmarks and tests. reset() goes back to the environment."""
    global _enabled, _tuner
    with _state_lock:
        if enabled is not None:
            _enabled = bool(enabled)
        if tuner is not None:
            _tuner = tuner


def reset() -> None:
    """Forget the env setting, the in-process entries and the tuner (tests; a changed cache dir)."""
    global _enabled, _tuner
    with _state_lock:
        _enabled, _tuner = None, None
