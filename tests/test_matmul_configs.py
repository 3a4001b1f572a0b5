"""The matmul tile-config table exists twice: csrc/include/matmul_configs.h (the kernels) and
aiter_lite/tuning/matmul_configs.py (the planner). Parse the header and check that they agree, and
that every entry satisfies the constraints the kernels' static_asserts enforce (so a bad edit fails
here, on CPU CI, before anyone waits for nvcc)."""
import re
from pathlib import Path

import pytest

from aiter_lite.tuning.matmul_configs import (DEFAULT_CONFIG, MATMUL_CONFIGS, PATHS, SIMT_SMEM_PAD,
                                              WGMMA_EPILOGUE_BYTES_PER_WARP, WGMMA_SMEM_EXTRA, configs_for,
                                              default_config, path_for)

HEADER = Path(__file__).resolve().parent.parent / "csrc" / "include" / "matmul_configs.h"
CPP_PATHS = {"kSimt": "simt", "kTensorCore16": "tensor_core_16", "kTensorCoreTf32": "tensor_core_tf32",
             "kWgmma16": "wgmma_16", "kWgmmaTf32": "wgmma_tf32"}

# {path, bm, bn, bk, warps_m, warps_n, stages[, cluster_m[, split_k[, epilogue_overlap[, cluster_n[, a_rows]]]]]}:
# the optional fields default to 1, 1, 0, 1 and 0.
ENTRY = re.compile(r"/\*\s*(\d+)\s*\*/\s*\{\s*MatmulPath::(\w+)\s*,"
                   r"\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*"
                   r"(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\}\s*,")
DEFAULT = re.compile(r"/\*\s*(\w+)\s*\*/\s*(-?\d+)\s*,")


def _block(text: str, name: str) -> str:
    m = re.search(rf"// BEGIN {name}\n(.*?)// END {name}\n", text, re.S)
    assert m, f"markers '// BEGIN {name}' / '// END {name}' missing from {HEADER}"
    return m.group(1)


def _strip_comments_outside_index(line: str) -> str:
    return line.split("//", 1)[0]


@pytest.fixture(scope="module")
def header_text() -> str:
    return HEADER.read_text()


@pytest.fixture(scope="module")
def header_configs(header_text):
    entries = []
    for line in _block(header_text, "MATMUL CONFIG TABLE").splitlines():
        code = _strip_comments_outside_index(line).strip()
        if not code.startswith("/*"):
            continue  # declaration line or blank
        m = ENTRY.fullmatch(code)
        assert m, f"table line not in the one-entry-per-line form: {line!r}"
        idx, path, *nums = m.groups()
        assert path in CPP_PATHS, f"unknown MatmulPath {path} in {line!r}"
        nums[-5] = nums[-5] or "1"  # cluster_m's default
        nums[-4] = nums[-4] or "1"  # split_k's default
        nums[-3] = nums[-3] or "0"  # epilogue_overlap's default
        nums[-2] = nums[-2] or "1"  # cluster_n's default
        nums[-1] = nums[-1] or "0"  # a_rows's default
        entries.append((int(idx), CPP_PATHS[path], *map(int, nums)))
    return entries


def test_header_table_matches_python(header_configs):
    assert [tuple(c) for c in MATMUL_CONFIGS] == header_configs


def test_indices_are_positions(header_configs):
    assert [e[0] for e in header_configs] == list(range(len(header_configs)))
    assert [c.index for c in MATMUL_CONFIGS] == list(range(len(MATMUL_CONFIGS)))


def test_defaults_match(header_text):
    block = _block(header_text, "MATMUL DEFAULT CONFIGS")
    pairs = DEFAULT.findall(block)
    assert [p for p, _ in pairs] == list(CPP_PATHS), "defaults must be listed in MatmulPath order"
    assert {CPP_PATHS[p]: int(i) for p, i in pairs} == DEFAULT_CONFIG
    for path, idx in DEFAULT_CONFIG.items():
        assert MATMUL_CONFIGS[idx].path == path


def test_smem_pad_matches(header_text):
    m = re.search(r"kMatmulSimtSmemPad\s*=\s*(\d+)\s*;", header_text)
    assert m and int(m.group(1)) == SIMT_SMEM_PAD


def test_wgmma_smem_constants_match(header_text):
    m = re.search(r"kMatmulWgmmaEpilogueBytesPerWarp\s*=\s*(\d+)\s*;", header_text)
    assert m and int(m.group(1)) == WGMMA_EPILOGUE_BYTES_PER_WARP
    m = re.search(r"kMatmulWgmmaSmemExtra\s*=\s*(\d+)\s*;", header_text)
    assert m and int(m.group(1)) == WGMMA_SMEM_EXTRA


def test_path_enum_order(header_text):
    m = re.search(r"enum class MatmulPath\s*:\s*int32_t\s*\{([^}]*)\}", header_text)
    names = [part.split("=")[0].strip() for part in m.group(1).split(",") if part.strip()]
    assert [CPP_PATHS[n] for n in names] == list(PATHS)


@pytest.mark.parametrize("cfg", [c for c in MATMUL_CONFIGS if c.path == "simt"], ids=lambda c: f"cfg{c.index}")
def test_simt_constraints(cfg):
    wm, wn = cfg.warp_tile
    tm, tn = cfg.thread_tile
    assert cfg.stages == 2
    assert cfg.bm % cfg.warps_m == 0 and cfg.bn % cfg.warps_n == 0
    assert wm % 16 == 0 and wn % 32 == 0, "thread tiles are 4x4 sub-tiles"
    assert tm * tn <= 128
    for mn in (cfg.bm, cfg.bn):  # SimtTileLoader
        assert (mn * cfg.bk) % (4 * cfg.threads) == 0
        assert cfg.threads % (cfg.bk // 4) == 0 and cfg.threads % (mn // 4) == 0
    assert cfg.smem_bytes(4) <= 99 * 1024  # every sm_80+ GPU (more than 48 KB needs the opt-in attribute)


@pytest.mark.parametrize("cfg", [c for c in MATMUL_CONFIGS if c.path.startswith("tensor_core")],
                         ids=lambda c: f"cfg{c.index}")
def test_tensor_core_constraints(cfg):
    tf32 = cfg.path == "tensor_core_tf32"
    elem = 4 if tf32 else 2
    chunk = 16 // elem
    mma_k = 8 if tf32 else 16
    assert cfg.stages >= 2
    assert cfg.bm % (16 * cfg.warps_m) == 0 and cfg.bn % (16 * cfg.warps_n) == 0
    assert cfg.bk % mma_k == 0 and (cfg.bk // mma_k) % 2 == 0
    for rows, cols in ((cfg.bm, cfg.bk), (cfg.bk, cfg.bm), (cfg.bn, cfg.bk), (cfg.bk, cfg.bn)):  # both layouts
        row_chunks = cols // chunk
        assert row_chunks == 4 or row_chunks % 8 == 0, "swizzle needs 64-byte rows or multiples of 128"
        assert (rows * row_chunks) % cfg.threads == 0 and cfg.threads % row_chunks == 0
    # Fits an sm_80 block (163 KB of dynamic shared memory); sm_90 allows 227 KB.
    assert cfg.smem_bytes(elem) <= 163 * 1024


@pytest.mark.parametrize("cfg", configs_for("wgmma_16"), ids=lambda c: f"cfg{c.index}")
def test_wgmma_constraints(cfg):
    """The static_asserts of WgmmaMatmulTraits (csrc/kernels/matmul_wgmma.cuh)."""
    consumers = cfg.warps_m // 4
    assert cfg.warps_n == 1 and cfg.warps_m % 4 == 0 and consumers in (1, 2)
    assert cfg.bk == 64, "one 128-byte swizzle row of 16-bit elements"
    assert cfg.bm % consumers == 0 and (cfg.bm // consumers) in (64, 128)
    assert cfg.bn in (64, 128, 192, 256) and cfg.bm <= 256
    assert cfg.cluster_m in (1, 2) and cfg.cluster_n in (1, 2)
    # Each CTA of a multicast cluster loads whole 1024-byte swizzle atoms (8 rows of 128 bytes).
    assert (cfg.bn // cfg.cluster_m) % 8 == 0 and (cfg.bm // cfg.cluster_n) % 8 == 0
    assert cfg.split_k in (1, 2, 4)
    assert cfg.cluster_m * cfg.cluster_n == 1 or cfg.split_k == 1, "a cluster splits M and N, or K"
    assert 0 <= cfg.epilogue_overlap <= cfg.bn // 64
    if cfg.epilogue_overlap:  # wgmma_consumer_overlap: persistent, one m64 block per consumer
        assert cfg.split_k == 1 and cfg.bm // consumers == 64
    assert 2 <= cfg.stages and 2 * cfg.stages * 8 <= 1024
    assert cfg.threads == 32 * cfg.warps_m + 128
    assert cfg.smem_bytes(2) <= 227 * 1024  # the H100's opt-in limit per block


@pytest.mark.parametrize("cfg", configs_for("wgmma_tf32"), ids=lambda c: f"cfg{c.index}")
def test_wgmma_tf32_constraints(cfg):
    """The static_asserts of WgmmaTf32Traits (csrc/kernels/matmul_wgmma_tf32.cuh)."""
    consumers = cfg.warps_m // 4
    assert cfg.warps_n == 1 and cfg.warps_m % 4 == 0 and consumers in (1, 2)
    assert cfg.bn == 64 * consumers, "a consumer owns 64 output columns"
    assert cfg.bk == 32, "one 128-byte swizzle row of fp32"
    assert cfg.bm in (64, 128, 192, 256), "wgmma N = BM"
    assert cfg.cluster_m == 1 and cfg.split_k == 1 and cfg.epilogue_overlap == 0
    assert 2 <= cfg.stages and 2 * cfg.stages * 8 <= 1024
    assert cfg.threads == 32 * cfg.warps_m + 128
    assert cfg.smem_bytes(4) == cfg.stages * cfg.bk * (cfg.bm + cfg.bn) * 4 + WGMMA_SMEM_EXTRA
    assert cfg.smem_bytes(4) <= 227 * 1024  # the H100's opt-in limit per block


def test_wgmma_tf32_configs_are_appended():
    """The tf32 wgmma configs come after every older entry (indices 0-22 keep their meaning)."""
    idx = [c.index for c in configs_for("wgmma_tf32")]
    assert idx and min(idx) == 23 and idx == list(range(23, 23 + len(idx)))
    assert MATMUL_CONFIGS[DEFAULT_CONFIG["wgmma_tf32"]].path == "wgmma_tf32"


def test_wgmma_tf32_default_config_by_waves():
    """config=-1 on the tf32 wgmma path (wgmma_tf32_choose_config in matmul.cu): the 256x128 tile on
    large problems, 192x128 at 3000^3 (288 tiles of 256x128 = 2.2 waves on 132 SMs, 384 of 192x128 =
    2.9), the one-consumer 128x64 tile where the big tiles leave most SMs idle."""
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (8192, 1024, 8192)):
        c = MATMUL_CONFIGS[default_config("wgmma_tf32", m, n, k=k)]
        assert (c.bm, c.bn) == (256, 128), (m, n, k)
    assert MATMUL_CONFIGS[default_config("wgmma_tf32", 3000, 3000, k=3000)].bm == 192
    c = MATMUL_CONFIGS[default_config("wgmma_tf32", 128, 8192, k=8192)]
    assert (c.bm, c.bn) == (128, 64)
    with pytest.raises(ValueError):
        default_config("wgmma_tf32", 4096, 4096, max_smem_per_block=163 * 1024)


def test_other_paths_have_cluster_1():
    assert all(c.cluster_m == 1 and c.cluster_n == 1 and c.split_k == 1 and c.epilogue_overlap == 0
               for c in MATMUL_CONFIGS if c.path != "wgmma_16")


def test_wgmma_split_k_smem():
    """Split-K configs carry a BM x BN fp32 partial tile on top of the kernel's other shared memory;
    configs that defer d > 1 pieces of their stores have d epilogue slots per warp."""
    for c in configs_for("wgmma_16"):
        slots = max(1, c.epilogue_overlap)
        a_rows = c.a_rows or c.bm  # a_rows configs stage only that many rows of A
        base = c.stages * c.bk * (a_rows + c.bn) * 2 + c.warps * WGMMA_EPILOGUE_BYTES_PER_WARP * slots + WGMMA_SMEM_EXTRA
        assert c.smem_bytes(2) == base + (c.bm * c.bn * 4 if c.split_k > 1 else 0)


def test_every_path_has_configs():
    for path in PATHS:
        assert configs_for(path)


def test_path_for():
    assert path_for("float32") == "simt"
    assert path_for("float32", allow_tf32=True) == "tensor_core_tf32"
    assert path_for("float16") == path_for("bfloat16") == "tensor_core_16"
    assert path_for("float16", variant="tiled") == "simt"
    with pytest.raises(ValueError):
        path_for("float32", variant="tensor_core")
    with pytest.raises(ValueError):
        path_for("float32", variant="naive")
    assert path_for("float16", variant="wgmma") == path_for("bfloat16", sm90=True) == "wgmma_16"
    assert path_for("float16", variant="tensor_core", sm90=True) == "tensor_core_16"
    # fp32 with TF32 on an H100: the tf32 wgmma kernel for auto and wgmma, mma.sync for tensor_core
    assert path_for("float32", allow_tf32=True, sm90=True) == "wgmma_tf32"
    assert path_for("float32", allow_tf32=True, variant="wgmma") == "wgmma_tf32"
    assert path_for("float32", allow_tf32=True, variant="tensor_core", sm90=True) == "tensor_core_tf32"
    assert path_for("float32", sm90=True) == "simt"
    with pytest.raises(ValueError):
        path_for("float32", variant="wgmma")


def test_default_config_respects_shared_memory():
    d = DEFAULT_CONFIG["tensor_core_16"]
    need = MATMUL_CONFIGS[d].smem_bytes(2)
    assert default_config("tensor_core_16", 4096, 4096, max_smem_per_block=need) == d
    other = MATMUL_CONFIGS[default_config("tensor_core_16", 4096, 4096, max_smem_per_block=99 * 1024)]
    assert other.path == "tensor_core_16" and other.smem_bytes(2) <= 99 * 1024
    with pytest.raises(ValueError):
        default_config("tensor_core_16", 4096, 4096, max_smem_per_block=1024)


def test_default_config_small_grids_take_the_smallest_tile():
    assert default_config("tensor_core_16", 4096, 4096) == DEFAULT_CONFIG["tensor_core_16"]
    small = default_config("tensor_core_16", 128, 8192)
    assert small != DEFAULT_CONFIG["tensor_core_16"]
    c = MATMUL_CONFIGS[small]
    assert c.bm * c.bn == min(x.bm * x.bn for x in configs_for("tensor_core_16"))
    assert default_config("simt", 16, 4096, batch=64) == DEFAULT_CONFIG["simt"]


def test_wgmma_default_config_by_waves():
    """config=-1 on the wgmma path (wgmma_choose_config in matmul.cu), on the Hopper issue's shapes,
    with the rates measured by the per-config sweep on an H100: the 128x256 tile with deferred stores
    for large problems, 128x192 where 128x256 leaves a poor last wave (3000^3: 288 tiles = 2.2 waves,
    384 of 128x192 = 2.9), 128x64 for 128-row M (128 tiles on 132 SMs), split-K for 64-row M (32 rows and
    fewer: the a_rows configs, next tests)."""
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (8192, 1024, 8192),
                    (4096, 11008, 4096)):
        c = MATMUL_CONFIGS[default_config("wgmma_16", m, n, k=k)]
        assert (c.bm, c.bn, c.cluster_m, c.split_k, c.epilogue_overlap) == (128, 256, 1, 1, 2), (m, n, k)
    c = MATMUL_CONFIGS[default_config("wgmma_16", 3000, 3000, k=3000)]
    assert (c.bm, c.bn, c.split_k) == (128, 192, 1)
    c = MATMUL_CONFIGS[default_config("wgmma_16", 16, 4096, k=4096)]  # 16 rows of A: the a_rows config
    assert (c.bm, c.bn, c.split_k, c.a_rows) == (64, 64, 1, 32)
    c = MATMUL_CONFIGS[default_config("wgmma_16", 64, 4096, k=4096)]
    assert (c.bm, c.bn, c.split_k) == (64, 64, 2)
    c = MATMUL_CONFIGS[default_config("wgmma_16", 128, 8192, k=8192)]
    assert (c.bm, c.bn, c.split_k) == (128, 64, 1)
    # Split-K only pays with enough k-tiles per CTA: a short K keeps the whole K in one CTA.
    assert MATMUL_CONFIGS[default_config("wgmma_16", 16, 4096, k=64)].split_k == 1
    with pytest.raises(ValueError):  # every wgmma config needs more than an sm_80 block's 163 KB
        default_config("wgmma_16", 4096, 4096, max_smem_per_block=163 * 1024)


def test_wgmma_default_config_few_rows_takes_64_row_tiles():
    """With at most 64 rows of A only the 64-row wgmma configs compete: the waves alone pick 128 x 128 tiles
    for 1..64 x 11008 x 4096, which measured 1.03-1.18x the 64 x 64 tiles' time (H200, session 28). One row
    more, and the 128-row configs are back; an epilogue or an M-major A keeps the rule (their 64-row kernels
    exist)."""
    for m in (1, 7, 16, 32, 64):
        for n in (4096, 11008, 14336, 32000):
            for kw in ({}, {"epilogue": True}, {"a_k_major": False}):
                c = MATMUL_CONFIGS[default_config("wgmma_16", m, n, k=4096, **kw)]
                assert c.bm == 64, (m, n, kw, c)
    assert MATMUL_CONFIGS[default_config("wgmma_16", 48, 11008, k=4096)].split_k == 1
    assert MATMUL_CONFIGS[default_config("wgmma_16", 65, 11008, k=4096)].bm == 128


def test_wgmma_default_config_up_to_32_rows_loads_32_rows_of_a():
    """With at most 32 rows of A the configs that load only 32 rows (a_rows) compete first: the fewest waves of
    tiles, then the most tiles (H200, session 28: 64 x 128 tiles for 11008 columns, 86 tiles in one wave; 64 x 64 for
    4096 and 8192, one wave either way); split-K where even 64-column tiles would reach fewer than a quarter of the
    SMs; none for 33 rows, for an M-major A (no such kernel), or where they do not fit the shared memory."""
    pick = lambda m, n, **kw: MATMUL_CONFIGS[default_config("wgmma_16", m, n, k=4096, **kw)]  # noqa: E731
    for m in (1, 7, 16, 17, 32):
        assert (pick(m, 11008).a_rows, pick(m, 11008).bn) == (32, 128)
        assert (pick(m, 14336).a_rows, pick(m, 14336).bn) == (32, 128)
        assert (pick(m, 4096).a_rows, pick(m, 4096).bn) == (32, 64)
        assert (pick(m, 8192).a_rows, pick(m, 8192).bn) == (32, 64)
        assert pick(m, 4096, epilogue=True).a_rows == 32
        assert pick(m, 1024).split_k == 2 and not pick(m, 1024).a_rows
        assert not pick(m, 4096, a_k_major=False).a_rows
    assert pick(1, 2176).a_rows == 32 and pick(1, 2048).split_k == 2  # 34 and 32 tiles of 64 columns on 132 SMs
    assert not pick(1, 4096, batch=40).a_rows or pick(1, 4096, batch=40).bn == 128  # 2560 or 1280 tiles: waves
    assert not pick(33, 11008).a_rows
    # the autotuner's M buckets are powers of two: an a_rows config tuned in one serves all of it
    assert all(c.a_rows & (c.a_rows - 1) == 0 for c in MATMUL_CONFIGS if c.a_rows)
    assert not pick(16, 11008, max_smem_per_block=215040 - 1).a_rows  # config 32 takes 215040 bytes, 31 more


def test_wgmma_wrappers_are_generated():
    """csrc/include/wgmma.cuh's wgmma.mma_async wrappers are what tools/gen_wgmma.py writes."""
    import subprocess
    import sys

    tool = HEADER.parent.parent.parent / "tools" / "gen_wgmma.py"
    assert subprocess.run([sys.executable, str(tool), "--check"]).returncode == 0, \
        "run python3 tools/gen_wgmma.py to regenerate csrc/include/wgmma.cuh"
