#!/bin/bash
# Session 19, one device call: causal-conv1d with its backward built (bench/peer_cache.py, packed to $OUT for later
# calls) beside this tree's module; conv_bwd_odd_ab.py --dao (odd L through the shifted rows against causal-conv1d,
# 2 rounds); the backward paths' and the states file's GPU tests; memcheck on the shifted rows tests. Summary last.
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
( timeout 300 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers --pack "$OUT/prebuilt_site.tar.xz" \
    > "$L/peers.txt" 2>&1; echo "peers rc=$?" >> "$L/peers.txt" ) &
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"
wait
echo "peers: $(tail -n 2 "$L/peers.txt" | tr '\n' ' ') build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
for r in 1 2; do
  PYTHONPATH=$PWD:/tmp/peers/site timeout 90 python3 bench/lab/conv_bwd_odd_ab.py new --dao >> "$L/odd.txt" 2>> "$L/odd_err.txt"
done
echo "odd done at $((SECONDS - t0)) s"; tail -n 3 "$L/odd_err.txt"
gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py" \
  "tests/test_gpu_causal_conv1d_bwd_paths.py" "shifted_rows" 200 100
cat "$L/odd.txt"; echo
check_summary
