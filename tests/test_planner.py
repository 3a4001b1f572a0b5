"""Matmul tile planner (aiter_lite/tuning/planner.py): the arithmetic on hand-computed examples, the
pruning reasons, the ranking on a few shapes, the text output and the CLI. CPU only, no torch needed."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiter_lite.tuning import planner as pl
from aiter_lite.tuning.hardware import A100_SXM, H100_SXM, get_device
from aiter_lite.tuning import matmul_configs as mc
from aiter_lite.tuning.matmul_configs import MatmulTileConfig
from aiter_lite.tuning.planner import (choose_config, estimate_registers, evaluate, format_plan, occupancy, plan,
                                       rank_table_configs, s_min, smem_bytes, table_order, tile_intensity,
                                       wave_efficiency)

REPO = Path(__file__).resolve().parent.parent
TC = "tensor_core_16"


def tc(bm, bn, bk, wm, wn, stages, path=TC):
    return MatmulTileConfig.candidate(path, bm, bn, bk, wm, wn, stages)


def simt(bm, bn, bk, wm, wn, stages=2):
    return MatmulTileConfig.candidate("simt", bm, bn, bk, wm, wn, stages)


# ---- arithmetic ---------------------------------------------------------------------------------


def test_smem_bytes_hand_computed():
    # stages * BK * (BM + BN) * bytes: 4 * 32 * 256 * 2
    assert smem_bytes(tc(128, 128, 32, 2, 2, 4), 2) == 65536
    # 3 * 32 * (128 + 256) * 2
    assert smem_bytes(tc(128, 256, 32, 2, 4, 3), 2) == 73728
    # SIMT: padding of 4 floats per BK-row of each tile: 2 * 8 * (132 + 132) * 4
    assert smem_bytes(simt(128, 128, 8, 4, 2), 4, pad=4) == 16896


PLANNER_DTYPE = {"simt": "fp32", TC: "bf16", "tensor_core_tf32": "tf32", "wgmma_16": "bf16", "wgmma_tf32": "tf32"}


def test_smem_bytes_agree_with_the_kernel_table():
    for c in mc.MATMUL_CONFIGS:
        if c.path not in PLANNER_DTYPE:
            continue  # a path the planner does not model
        dtype = PLANNER_DTYPE[c.path]
        est = evaluate(c, 1024, 1024, 1024, dtype)
        assert est.smem_bytes == c.smem_bytes(2 if dtype == "bf16" else 4), c
        # the planner's candidates are the same type: a candidate of the same tile is modelled alike
        cand = c._replace(index=None)
        assert cand.index is None and cand[1:] == c[1:]
        assert evaluate(cand, 1024, 1024, 1024, dtype).smem_bytes == est.smem_bytes


def test_registers_hand_computed():
    # 64x64 warp tile, 128 threads: 128 accumulators + 2 x (4 m-tiles x 4 + 8 n-tiles x 2) fragments + 32
    assert estimate_registers(tc(128, 128, 32, 2, 2, 4), "bf16") == 128 + 64 + 32
    # 32x64 warp tile: 64 + 2 x (2 x 4 + 8 x 2) + 32 = 144
    assert estimate_registers(tc(64, 128, 32, 2, 2, 4), "bf16") == 144
    # SIMT 8x8 thread tile, 256 threads: 64 + 8 + 8 + (256 x 8 / 256 staging) + 32 = 120
    assert estimate_registers(simt(128, 128, 8, 4, 2), "fp32") == 120
    # 128 x 256 on 4 warps: 256 accumulators alone are over the limit
    assert estimate_registers(tc(128, 256, 32, 2, 2, 3), "bf16") > 255


def test_occupancy_hand_computed():
    # 224 regs -> 7168 per warp -> 9 warps -> 2 blocks of 4 warps; smem 233472 // (65536 + 1024) = 3
    assert occupancy(H100_SXM, 128, 224, 65536) == (2, "registers")
    # 120 regs -> 3840 per warp -> 17 warps -> 2 blocks of 8 warps
    assert occupancy(H100_SXM, 256, 120, 16896) == (2, "registers")
    # 100 KB + 1 KB reserved: 233472 // 103424 = 2 (registers would allow 8)
    assert occupancy(H100_SXM, 128, 64, 100 * 1024) == (2, "shared memory")
    # tiny blocks: capped by threads (2048 / 64 = 32) and the 32-block limit
    assert occupancy(H100_SXM, 64, 32, 1024)[0] == 32
    # the A100 has 164 KB per SM: 167936 // 103424 = 1
    assert occupancy(A100_SXM, 128, 64, 100 * 1024) == (1, "shared memory")
    assert occupancy(H100_SXM, 128, 256, 1024)[0] == 0  # over 255 registers


def test_intensity_ridge_and_s_min():
    assert tile_intensity(128, 128, 2) == pytest.approx(64.0)   # 2*128*128 / (256*2)
    assert tile_intensity(128, 256, 2) == pytest.approx(2 * 128 * 256 / (384 * 2))
    assert H100_SXM.peak("bf16") == pytest.approx(740e12 * 0.65)
    assert H100_SXM.peak("bf16", mma_sync=False) == pytest.approx(740e12)
    assert H100_SXM.peak("fp32") == pytest.approx(52e12)          # no mma.sync factor on the SIMT path
    assert H100_SXM.ridge("bf16") == pytest.approx(740e12 * 0.65 / 3.0e12)
    assert s_min(700e-9, 576e-9) == 3   # ceil(1.22) + 1
    assert s_min(700e-9, 700e-9) == 2   # exactly one k-tile of latency
    assert s_min(700e-9, 100e-9) == 8


def test_k_tile_time_counts_the_blocks_sharing_an_sm():
    # 128x128x32 bf16: 2*128*128*32 FLOP at 481/132 TFLOP/s per SM = 288 ns per block, x2 blocks
    # (without the L2 fill roof, which is the longer of the two here, see below).
    e = evaluate(tc(128, 128, 32, 2, 2, 4), 4096, 4096, 4096, "bf16", H100_SXM.with_overrides(l2_fill_bw=None))
    assert e.blocks_per_sm == 2 and e.resident == 2
    assert e.t_tile == pytest.approx(2 * 2 * 128 * 128 * 32 / (740e12 * 0.65 / 132))
    assert e.s_min == 3


def test_k_tile_time_has_the_cp_async_fill_roof():
    # With it: (128 + 128) x 32 x 2 B per block and k-tile, x2 blocks, at 5.0 / 132 TB/s per SM = 865 ns.
    e = evaluate(tc(128, 128, 32, 2, 2, 4), 4096, 4096, 4096, "bf16", "h100")
    assert e.t_tile == pytest.approx(2 * (128 + 128) * 32 * 2 / (5.0e12 / 132))
    assert e.s_min == 2
    # 128 x 256 moves fewer L2 bytes per FLOP than 128 x 128, so at 4096^3 it is predicted faster,
    # as measured (docs/planner.md); the SIMT path (plain loads) has no such roof.
    big = evaluate(tc(128, 256, 32, 2, 4, 4), 4096, 4096, 4096, "bf16", "h100")
    assert big.predicted_s < e.predicted_s
    ffma = simt(128, 128, 8, 4, 2)
    assert evaluate(ffma, 4096, 4096, 4096, "fp32", "h100").t_tile == \
        evaluate(ffma, 4096, 4096, 4096, "fp32", H100_SXM.with_overrides(l2_fill_bw=None)).t_tile


def test_wave_efficiency_exact_fill_is_one():
    assert wave_efficiency(132, 132, 1) == 1.0
    assert wave_efficiency(264, 132, 2) == 1.0
    assert wave_efficiency(133, 132, 1) == pytest.approx(133 / 264)
    # 11 x 12 tiles of 128x128 = 132 blocks, one per SM of the H100
    e = evaluate(tc(128, 128, 32, 2, 2, 4), 11 * 128, 12 * 128, 4096, "bf16", "h100")
    assert e.tiles == 132 and e.wave_eff == 1.0 and e.waves == 1.0 and e.tail_eff == 1.0


def test_tail_efficiency():
    e = evaluate(tc(128, 128, 32, 2, 2, 4), 100, 4096, 1000, "bf16", "h100")
    assert e.tail_eff == pytest.approx((100 * 4096 * 1000) / (128 * 4096 * 1024))


# ---- pruning ------------------------------------------------------------------------------------


def test_smem_over_the_per_block_limit_is_pruned():
    e = evaluate(tc(128, 256, 64, 2, 4, 5), 4096, 4096, 4096, "bf16", "h100")  # 240 KB
    assert e.pruned and e.hard
    assert any("shared memory" in r for r in e.reasons)
    # and it shows in the plan's pruned list with that reason
    p = plan(4096, 4096, 4096, "bf16", "h100")
    hit = [x for x in p.pruned if (x.config.bm, x.config.bn, x.config.bk, x.config.stages) == (128, 256, 64, 5)]
    assert hit and all(any("shared memory" in r for r in x.reasons) for x in hit)


def test_shallow_pipeline_is_pruned_with_s_min():
    # The tensor pipe's k-tile time alone (288 ns x 2 blocks): S_min = ceil(700 / 576) + 1 = 3. (With the
    # L2 fill roof the k-tile takes 865 ns and 2 stages hide the latency.)
    h100 = H100_SXM.with_overrides(l2_fill_bw=None)
    e = evaluate(tc(128, 128, 32, 2, 2, 2), 4096, 4096, 4096, "bf16", h100)
    assert e.pruned and not e.hard
    assert any("S_min" in r for r in e.reasons)
    assert e.s_min == 3
    deep = evaluate(tc(128, 128, 32, 2, 2, 3), 4096, 4096, 4096, "bf16", h100)
    assert not deep.pruned
    assert e.predicted_s > deep.predicted_s  # the exposed latency costs time


def test_too_many_registers_are_pruned():
    e = evaluate(tc(256, 256, 32, 4, 2, 3), 4096, 4096, 4096, "bf16", "h100")
    assert e.hard and any("registers" in r for r in e.reasons)


def test_oversized_tile_is_pruned_only_when_a_smaller_one_exists():
    e = evaluate(tc(256, 128, 32, 4, 2, 3), 16, 4096, 4096, "bf16", "h100", min_tile=(64, 64))
    assert any("too large" in r for r in e.reasons)
    e = evaluate(tc(64, 128, 32, 2, 2, 6), 16, 4096, 4096, "bf16", "h100", min_tile=(64, 64))
    assert not any("too large" in r for r in e.reasons)


def test_memory_bound_prune():
    # A GPU with little bandwidth: ridge 600 FLOP/B, below the problem's 5461 but above small tiles' waves.
    dev = H100_SXM.with_overrides(mem_bw=H100_SXM.peak("bf16") / 600)
    p = plan(16384, 16384, 16384, "bf16", dev)
    mb = [e for e in p.pruned if any("memory bound" in r for r in e.reasons)]
    assert mb and all(e.wave_ai < p.ridge for e in mb)
    assert all(e.wave_ai >= p.ridge for e in p.ranked)
    # a problem that is memory bound itself prunes nothing for intensity: the tile can't fix it
    p = plan(16, 4096, 4096, "bf16", "h100")
    assert p.problem_ai < p.ridge
    assert not any("memory bound" in r for e in p.pruned for r in e.reasons)


# ---- ranking ------------------------------------------------------------------------------------


def _labels(p):
    return [e.config.label() for e in p.ranked], [(e.config.label(), tuple(e.reasons)) for e in p.pruned]


def test_ranking_is_deterministic():
    a, b = plan(4096, 4096, 4096, "bf16", "h100"), plan(4096, 4096, 4096, "bf16", "h100")
    assert _labels(a) == _labels(b)
    keys = [e.sort_key() for e in a.ranked]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)  # a total order: no tie left to chance
    assert [e.config.index for e in rank_table_configs(4096, 4096, 4096, "bf16")] == \
        [e.config.index for e in rank_table_configs(4096, 4096, 4096, "bf16")]


def test_large_square_bf16_picks_a_large_tile():
    p = plan(4096, 4096, 4096, "bf16", "h100")
    top = p.best
    assert top is not None and top.config.bm * top.config.bn >= 128 * 128
    assert top.tflops <= H100_SXM.peak("bf16") / 1e12  # never above the ceiling it was given
    assert top.tflops > 0.8 * H100_SXM.peak("bf16") / 1e12


def test_skinny_m_does_not_pick_256_rows():
    p = plan(16, 4096, 4096, "bf16", "h100")
    assert p.best is not None and p.best.config.bm != 256
    assert all(e.config.bm != 256 for e in p.ranked)
    assert mc.MATMUL_CONFIGS[choose_config(16, 4096, 4096, "bf16", "h100")].bm != 256


def test_fp32_uses_the_simt_space_and_tf32_the_tensor_core_one():
    p = plan(4096, 4096, 4096, "fp32", "h100")
    assert p.path == "simt" and p.best.config.path == "simt" and p.best.config.bk in (8, 16, 32)
    assert p.peak == pytest.approx(52e12)
    t = plan(4096, 4096, 4096, "tf32", "h100")
    assert t.path == "tensor_core_tf32" and t.peak == pytest.approx(370e12 * 0.65)


def test_a100_model_plans_too():
    p = plan(4096, 4096, 4096, "bf16", "a100")
    assert p.device.sm_count == 108 and p.best is not None
    assert p.best.tflops <= 312


def test_table_configs_and_choose_config():
    ranked = rank_table_configs(4096, 4096, 4096, "bf16", "h100")
    assert sorted(e.config.index for e in ranked) == [c.index for c in mc.configs_for(TC)]
    assert sorted(e.config.index for e in rank_table_configs(64, 64, 64, "fp32")) == \
        [c.index for c in mc.configs_for("simt")]
    # variant="tiled" runs 16-bit inputs on the SIMT kernel: rank those configs on request
    assert {e.config.path for e in rank_table_configs(64, 64, 64, "bf16", path="simt")} == {"simt"}
    for dtype, path in (("bf16", TC), ("fp16", TC), ("tf32", "tensor_core_tf32"), ("fp32", "simt"),
                        ("torch.bfloat16", TC), ("float32", "simt")):
        idx = choose_config(4096, 4096, 4096, dtype, "h100")
        assert mc.MATMUL_CONFIGS[idx].path == path
    # bucketing: shapes rounding to the same powers of two share one cached answer
    pl._choose_cached.cache_clear()
    choose_config(3000, 4000, 4096, "bf16")
    choose_config(2049, 4096, 4095, "bf16")
    assert pl._choose_cached.cache_info().hits == 1
    assert pl.bucket(1) == 1 and pl.bucket(2049) == 4096 and pl.bucket(4096) == 4096


def test_table_order_is_what_choose_config_takes():
    for dtype in ("bf16", "tf32", "fp32"):
        for shape in ((4096, 4096, 4096), (128, 8192, 8192), (16, 4096, 4096)):
            order = table_order(rank_table_configs(*shape, dtype, "h100"))
            assert order and all(not e.hard for e in order)
            times = [float(f"{e.predicted_s:.4g}") for e in order]
            assert times == sorted(times)
            assert order[0].config.index == choose_config(*shape, dtype, "h100")


def test_configs_of_paths_the_planner_does_not_model_are_ignored(monkeypatch):
    # another kernel family appended to the table (e.g. a Hopper path): ranked nowhere, no error
    extra = MatmulTileConfig(len(mc.MATMUL_CONFIGS), "future_path", 128, 256, 64, 2, 4, 4)
    monkeypatch.setattr(pl, "MATMUL_CONFIGS", mc.MATMUL_CONFIGS + (extra,))
    pl._choose_cached.cache_clear()
    try:
        assert extra.index not in [e.config.index for e in rank_table_configs(4096, 4096, 4096, "bf16")]
        assert mc.MATMUL_CONFIGS[choose_config(4096, 4096, 4096, "bf16")].path == TC
        assert "future_path" not in format_plan(4096, 4096, 4096, "bf16")
    finally:
        pl._choose_cached.cache_clear()


def test_bad_inputs_raise_value_error():
    with pytest.raises(ValueError):
        plan(0, 16, 16, "bf16")
    with pytest.raises(ValueError):
        plan(16, 16, 16, "int8")
    with pytest.raises(ValueError):
        get_device("tpu-v9")
    assert get_device("NVIDIA H100 80GB HBM3") is H100_SXM
    assert get_device("A100-SXM") is A100_SXM


# ---- text and CLI -------------------------------------------------------------------------------


def test_format_plan_has_header_and_rows():
    text = format_plan(4096, 4096, 4096, "bf16", device="h100", show_pruned=False)
    lines = text.splitlines()
    header = [l for l in lines if l.startswith("| rank |")]
    assert header
    for col in ("BM", "BN", "BK", "warps", "stages", "smem KB", "regs/thr", "blocks/SM", "ridge", "S_min",
                "waves", "wave eff", "pred us", "pred TFLOP/s"):
        assert col in header[0]
    assert any(l.startswith("|    1 |") for l in lines)
    assert "pruned (" not in text
    full = format_plan(4096, 4096, 4096, "bf16", device="h100", show_pruned=True)
    assert "pruned (" in full and "shared memory" in full and "S_min=" in full


def test_format_plan_when_nothing_survives():
    text = format_plan(1, 1, 1, "fp16", device="h100", show_pruned=True)
    assert isinstance(text, str) and "|" in text


def test_planning_does_not_import_torch():
    code = ("import sys; from aiter_lite.tuning.planner import format_plan, choose_config; "
            "format_plan(512, 512, 512, 'bf16', device='a100', show_pruned=True); choose_config(5, 6, 7, 'tf32'); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(REPO))
    assert r.returncode == 0, r.stderr


def test_cli_plan_exits_zero():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "aiter_lite", "plan", "--m", "4096", "--n", "4096", "--k", "4096",
                        "--dtype", "bf16"], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| rank |" in r.stdout
    r = subprocess.run([sys.executable, "-m", "aiter_lite", "plan", "--m", "128", "--n", "8192", "--k", "8192",
                        "--dtype", "fp32", "--device", "a100", "--all"], capture_output=True, text=True, env=env,
                       cwd=str(REPO), timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "aiter_lite", "plan", "--m", "1", "--n", "1", "--k", "1",
                        "--device", "nope"], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
    assert r.returncode == 1 and "unknown device model" in r.stderr
