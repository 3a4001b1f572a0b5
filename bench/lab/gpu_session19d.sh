#!/bin/bash
# Session 19, one device call: (1) this tree (the backward kernels read padding tokens' dout as 0; no masking
# pass) against main (.peers/old_tree.tar) on the seq_idx backward (conv_bwd_seq_idx_ab.py); (2) the shifted rows
# (odd L) built three more ways from this tree with NVCC_APPEND_FLAGS (6 or 7 blocks per SM at 2 vectors a lane,
# or 1 vector a lane), timed by conv_bwd_odd_ab.py; (3) GPU tests of the backward paths and the states file's
# padding and gradient tests; memcheck on the new padding test. Every step has a timeout; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
declare -A FLAGS=([b6]="-DAITER_LITE_BWD_ROWS_SHIFTED_BLOCKS=6" [b7]="-DAITER_LITE_BWD_ROWS_SHIFTED_BLOCKS=7"
                  [v1]="-DAITER_LITE_BWD_ROWS_SHIFTED_ONE_VEC")
for v in b6 b7 v1; do
  NVCC_APPEND_FLAGS="${FLAGS[$v]}" build_tree "$NEW" /tmp/c_$v "$L/build_$v.txt" &
done
build_trees "$NEW" "$OLD"
wait
for v in b6 b7 v1; do echo "build_$v: $(tail -n 2 "$L/build_$v.txt" | tr '\n' ' ')"; done
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
( export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  timeout 200 $P tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py \
    -k "padding or grad or backward or bwd or rows or channel_last_paths or shifted or reproducible" > "$L/tests.txt" 2>&1
  echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12 )
ab_rounds conv_bwd_seq_idx_ab.py 90
for r in 1 2; do
  for v in new b6 b7 v1; do
    PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 60 python3 bench/lab/conv_bwd_odd_ab.py $v >> "$L/odd.txt" 2>> "$L/odd_err.txt"
  done
done
echo "odd A/B done at $((SECONDS - t0)) s"; tail -n 3 "$L/odd_err.txt"
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
timeout 120 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "padding_tokens_gradients_on_every_path and 4-" > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
echo; cat "$L/ab.txt"; echo; cat "$L/odd.txt"
