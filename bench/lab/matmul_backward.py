"""Forward + backward of a Linear-like layer (y = x @ w.t()) against torch (cuBLAS), and its parts.

dA = dC @ w runs wgmma with a K-major A and an N-major B; dB = x^T @ dC reads an M-major A (the view
x.t()) through wgmma's transpose bit. Each part is timed on its own (ours, cuBLAS, and for dB the
mma.sync kernel the call ran before the M-major A kernels: variant "wgmma" with config 13, which has
no M-major A kernel), then the whole layer, plain and with bias + gelu_tanh. Medians of do_bench
(L2 flushed), fresh random bf16 data, the LLM shape set of bench_matmul.py. Run:
bench/gpu.sh lab/matmul_backward.py [--quick]
"""
from __future__ import annotations

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench_matmul import LLM_SHAPES  # noqa: E402
from common import make_timer, need_cuda  # noqa: E402


def md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def main() -> int:
    need_cuda("matmul_backward")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    quick = "--quick" in sys.argv
    time_us, timer = make_timer(rep_ms=50 if quick else 100)
    dt = torch.bfloat16
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {datetime.date.today()}, {timer}, bf16")

    def randn(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dt)

    parts, layers = [], []
    for m, n, k in LLM_SHAPES[:2] if quick else LLM_SHAPES:  # tokens x out x in
        x, w, bias, dc = randn(m, k), randn(n, k), randn(n), randn(m, n)
        da_out, db_out = torch.empty(m, k, device="cuda", dtype=dt), torch.empty(k, n, device="cuda", dtype=dt)
        xt = x.t()
        da = [time_us(lambda: aiter_lite.matmul(dc, w, da_out)), time_us(lambda: torch.matmul(dc, w, out=da_out))]
        db = [time_us(lambda: aiter_lite.matmul(xt, dc, db_out)), time_us(lambda: torch.matmul(xt, dc, out=db_out)),
              time_us(lambda: aiter_lite.matmul(xt, dc, db_out, variant="wgmma", config=13))]
        ok = (aiter_lite.matmul(xt, dc).float() - torch.matmul(xt, dc).float()).norm() / torch.matmul(xt, dc).float().norm()
        parts.append([f"{m}x{n}x{k}", f"{da[0]:.0f}", f"{da[1]:.0f}", f"{da[1] / da[0]:.2f}x", matmul_plan(dc, w),
                      f"{db[0]:.0f}", f"{db[1]:.0f}", f"{db[1] / db[0]:.2f}x", matmul_plan(xt, dc), f"{db[2]:.0f}",
                      f"{ok.item():.1e}"])

        xs, ws, bs = (t.clone().requires_grad_(True) for t in (x, w, bias))

        def step(fn):
            def run():
                xs.grad = ws.grad = bs.grad = None
                fn().backward(dc)
            return run

        plain = [time_us(step(lambda: aiter_lite.matmul(xs, ws.t()))), time_us(step(lambda: F.linear(xs, ws)))]
        act = [time_us(step(lambda: aiter_lite.matmul(xs, ws.t(), bias=bs, activation="gelu_tanh"))),
               time_us(step(lambda: F.gelu(F.linear(xs, ws, bs), approximate="tanh")))]
        layers.append([f"{m}x{n}x{k}", f"{plain[0]:.0f}", f"{plain[1]:.0f}", f"{plain[1] / plain[0]:.2f}x",
                       f"{act[0]:.0f}", f"{act[1]:.0f}", f"{act[1] / act[0]:.2f}x"])
    print("\n" + md_table(["tokens x out x in", "dA ours us", "dA cuBLAS us", "dA ratio", "dA kernel", "dB ours us",
                           "dB cuBLAS us", "dB ratio", "dB kernel", "dB on mma.sync us", "dB rel err vs cuBLAS"], parts))
    print("\n" + md_table(["tokens x out x in", "plain fwd+bwd ours us", "torch us", "ratio",
                           "bias+gelu_tanh fwd+bwd ours us", "torch us", "ratio"], layers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
