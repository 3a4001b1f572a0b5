#!/bin/bash
# Session 21, call 8: why +seq_idx+init+final costs more than its parts on the forward's rows kernel (bf16 8 x 5120 x
# 2048, W = 4): kernel times of each combination by torch.profiler (conv_fwd_kernel_split.py).
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"; echo "build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ')"
timeout 90 python3 bench/lab/conv_fwd_kernel_split.py --calls 20 2>&1 | grep -v -i warn | tee "$L/split.txt" | cut -c1-140
