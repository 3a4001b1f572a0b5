"""GPU (-m gpu): every backward kernel path at every compile-time width 1..8, so that each build-time
shard of the sharded conv files (jit_config.json "shards"; docs/jit.md "Shards") is called through the
real autograd API and checked against the float64 reference: rows (dense [B, D, L], L a multiple of the
vector), shifted rows (odd L), channel-last staged and direct, the tile kernel (rows padded in memory),
and width 9 (runtime-width kernels). The forward's paths at every width are in test_gpu_causal_conv1d.py
(test_forward_sweep)."""
import pytest
import torch

from test_gpu_causal_conv1d_bwd_paths import check, poison_allocator
from conv_states_cases import packed_seq_idx, random_normal
from test_causal_conv1d_grad import grads_vs_reference

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
DEV = torch.device("cuda")
PAIRS = [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)]

# layout of test_gpu_causal_conv1d_bwd_paths.make, (batch, dim, length)
PATHS = {
    "rows": ("contiguous", (2, 24, 1024)),
    "shifted_rows": ("contiguous", (2, 9, 777)),
    "channel_last_staged": ("channel_last", (2, 72, 300)),
    "channel_last_direct": ("cl_odd", (2, 40, 129)),
}


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("width", list(range(1, 10)))
def test_backward_path_every_width(path, width, x_dtype, w_dtype):
    torch.manual_seed(100 * width + list(PATHS).index(path))
    layout, shape = PATHS[path]
    for features in (False, True):
        check(layout, *shape, width, x_dtype, w_dtype, features)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", list(range(1, 10)))
def test_backward_tile_every_width(width, x_dtype, w_dtype):
    """Rows padded in memory (dim stride L + 3, seq stride 1): neither dense nor channel-last."""
    torch.manual_seed(1000 + width)
    b, d, length = 3, 10, 200
    x = random_normal((b, d, length + 3), x_dtype, DEV)[..., :length]
    w, bias = random_normal((d, width), w_dtype, DEV), random_normal((d,), w_dtype, DEV)
    poison_allocator(x.numel() * x.element_size())
    tol = {torch.bfloat16: 3e-2, torch.float16: 4e-3}[x_dtype]
    grads_vs_reference(x, w, bias, "silu", dtype_tol=tol)
    # with initial states (dinit), final states (their gradient) and packed sequences
    init = random_normal((b, d, width - 1), x_dtype, DEV)
    seq = packed_seq_idx(b, length, DEV, 4)
    grads_vs_reference(x, w, bias, "silu", initial_states=init, seq_idx=seq, final_states=True, dtype_tol=tol)
