#!/bin/bash
# One device call for the channel-last forward with features (bench/lab/conv_cl_features.py): build; the
# timings first on a quiet GPU (ours beside causal-conv1d with the same arguments); then the GPU test files, each in its own pytest process, side by side, and
# compute-sanitizer memcheck over the channel-last feature tests. Run from the repository root with .peers
# present; logs in $OUT.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}
nvidia-smi -L; date -u
python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > $OUT/peers.txt 2>&1 && export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
( time timeout 90 python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > $OUT/build.txt 2>&1
tail -n 3 $OUT/build.txt
timeout 40 python3 bench/lab/conv_cl_features.py --label default 2>&1 | tee $OUT/time_default.txt
T=${TEST_S:-140}
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout $T $P tests/test_gpu_causal_conv1d_states.py > $OUT/tests_states.txt 2>&1 &
timeout $T $P tests/test_gpu_causal_conv1d.py -k "not past_2_31" > $OUT/tests_plain.txt 2>&1 &
timeout $T $P tests/test_gpu_conv_shards.py > $OUT/tests_shards.txt 2>&1 &
timeout $T $P tests/test_gpu_peer_suite.py > $OUT/tests_peer.txt 2>&1 &
timeout $T compute-sanitizer --tool memcheck $P tests/test_gpu_causal_conv1d_states.py \
  -k "staged_kernel_features and (2 or 4)" > $OUT/memcheck.txt 2>&1 &
wait
for f in tests_states tests_plain tests_shards tests_peer memcheck; do
  echo "== $f"; grep -hE "^FAILED|Error" $OUT/$f.txt | head -8; tail -n 2 $OUT/$f.txt
done
