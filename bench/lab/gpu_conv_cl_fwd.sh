#!/bin/bash
# One device call for the channel-last forward (bench/lab/conv_cl_fwd.py): build; the lab correctness sweeps
# (conv_cl_fwd.py, and conv_dense_features.py's sweep of the feature kernels), the forward GPU test files and
# compute-sanitizer, two at a time (all at once, the sweeps ran past a 60 s limit); then graph timings beside
# causal-conv1d and a copy, and the channel-last rows with states and seq_idx against the plain forward.
# Run from the repository root with .peers present; logs in $OUT.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}
T=${STEP_S:-90}
nvidia-smi -L; date -u
python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > $OUT/peers.txt 2>&1 && export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
( time python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) 2>&1 | tail -3
timeout $T python3 bench/lab/conv_cl_fwd.py --check > $OUT/check_cl.txt 2>&1 &
timeout $T python3 bench/lab/conv_dense_features.py --no-time > $OUT/check_features.txt 2>&1 &
wait
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d.py -k "not past_2_31" > $OUT/tests_plain.txt 2>&1 &
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_states.py -k "not matches_cpu_kernels" > $OUT/tests_states.txt 2>&1 &
wait
timeout $T compute-sanitizer --tool memcheck python3 bench/lab/conv_dense_features.py --quick --no-time > $OUT/memcheck.txt 2>&1 &
timeout $T compute-sanitizer --tool racecheck python3 bench/lab/conv_dense_features.py --quick --no-time > $OUT/racecheck.txt 2>&1 &
wait
for f in check_cl check_features tests_plain tests_states memcheck racecheck; do
  echo "== $f"; grep -h FAIL $OUT/$f.txt | head -10; tail -n 2 $OUT/$f.txt
done
timeout ${TIME_S:-60} python3 bench/lab/conv_cl_fwd.py --time --out $OUT/cl.json > $OUT/time_cl.txt 2>&1
python3 bench/lab/conv_cl_fwd.py --table $OUT/cl.json | tee $OUT/table.md
timeout ${TIME_S:-60} python3 bench/lab/conv_dense_features.py --no-check --cl-only 2>&1 | tee $OUT/features_cl.txt
