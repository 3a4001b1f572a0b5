#!/bin/bash
# Session 27, call 6 (one H200): main's head after the session's kernel changes: causal-conv1d's own tests
# (tests/test_gpu_peer_suite.py) and the forward suite, built cold.
#   bash bench/gpu.sh lab/gpu_session27f.sh
source bench/lab/lab_steps.sh
peers_and_tree "$PWD" /tmp/c_new
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 150 $P tests/test_gpu_peer_suite.py -rA > "$L/tests_peer.txt" 2>&1
echo "peer suite rc=$? at $((SECONDS - t0)) s: $(grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_peer.txt" | tail -n 3 | tr '\n' ' ')"
timeout $((250 - (SECONDS - t0))) $P tests/test_gpu_causal_conv1d.py > "$L/tests_conv.txt" 2>&1
echo "conv tests rc=$? at $((SECONDS - t0)) s: $(grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_conv.txt" | tail -n 3 | tr '\n' ' ')"
