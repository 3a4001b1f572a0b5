"""The matmul tile-config table exists twice: csrc/include/matmul_configs.h (the kernels) and
aiter_lite/tuning/matmul_configs.py (the planner). Parse the header and check that they agree, and
that every entry satisfies the constraints the kernels' static_asserts enforce (so a bad edit fails
here, on CPU CI, before anyone waits for nvcc)."""
import re
from pathlib import Path

import pytest

from aiter_lite.tuning.matmul_configs import (DEFAULT_CONFIG, MATMUL_CONFIGS, PATHS, SIMT_SMEM_PAD, configs_for,
                                              default_config, path_for)

HEADER = Path(__file__).resolve().parent.parent / "csrc" / "include" / "matmul_configs.h"
CPP_PATHS = {"kSimt": "simt", "kTensorCore16": "tensor_core_16", "kTensorCoreTf32": "tensor_core_tf32"}

ENTRY = re.compile(r"/\*\s*(\d+)\s*\*/\s*\{\s*MatmulPath::(\w+)\s*,"
                   r"\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\}\s*,")
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


@pytest.mark.parametrize("cfg", [c for c in MATMUL_CONFIGS if c.path != "simt"], ids=lambda c: f"cfg{c.index}")
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
