#!/bin/bash
# One device call for the channel-last forward (bench/lab/conv_cl_fwd.py): build; correctness sweeps (each kernel
# choice of CHECK_CFGS, and bench/lab/conv_dense_features.py's sweep of the feature kernels) in parallel; graph
# timings of each kernel choice of TIME_CFGS (one process each, nothing else on the GPU), then the channel-last
# rows with states and seq_idx; then the forward GPU test files and compute-sanitizer in parallel. A choice is
# KERNEL:CHUNK (KERNEL regs, 8 or 16: AITER_LITE_CONV_CL_FWD; CHUNK a fixed chunk length or - for the plan).
# Run from the repository root with .peers present; logs in $OUT.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}
nvidia-smi -L; date -u
python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > $OUT/peers.txt 2>&1 && export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
( time python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) 2>&1 | tail -3
with_cfg() {  # with_cfg KERNEL:CHUNK COMMAND...
  local k=${1%%:*} c=${1##*:}; shift
  if [ "$c" = - ]; then AITER_LITE_CONV_CL_FWD=$k "$@"; else AITER_LITE_CONV_CL_FWD=$k AITER_LITE_CONV_CL_CHUNK=$c "$@"; fi
}
for cfg in ${CHECK_CFGS:-16:- 8:32 regs:16}; do
  with_cfg $cfg timeout ${CHECK_S:-60} python3 bench/lab/conv_cl_fwd.py --check > "$OUT/check_${cfg/:/_}.txt" 2>&1 &
done
timeout ${CHECK_S:-60} python3 bench/lab/conv_dense_features.py --no-time > $OUT/check_features.txt 2>&1 &
wait; tail -q -n 1 $OUT/check_*.txt
files=()
for cfg in ${TIME_CFGS:-regs:- regs:16 16:- 16:32 16:64 8:32}; do
  f=$OUT/${cfg/:/_}.json; files+=("$f")
  with_cfg $cfg timeout ${TIME_S:-30} python3 bench/lab/conv_cl_fwd.py --time --mid --out "$f" > "$OUT/time_${cfg/:/_}.txt" 2>&1 \
    || tail -n 3 "$OUT/time_${cfg/:/_}.txt"
done
python3 bench/lab/conv_cl_fwd.py --table "${files[@]}" | tee $OUT/table.md
for k in staged regs; do  # the channel-last rows with features: the staged kernel, then the register kernels
  echo "== features, channel-last, $k"
  ( [ $k = regs ] && export AITER_LITE_CONV_CL_FWD=regs
    timeout ${FEAT_S:-30} python3 bench/lab/conv_dense_features.py --no-check --cl-only 2>&1 ) | tee $OUT/features_cl_$k.txt
done
T=${TEST_S:-80}
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d.py -k "not past_2_31" > $OUT/tests_plain.txt 2>&1 &
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_states.py -k "not matches_cpu_kernels" > $OUT/tests_states.txt 2>&1 &
timeout $T compute-sanitizer --tool memcheck python3 bench/lab/conv_dense_features.py --quick --no-time > $OUT/memcheck_features.txt 2>&1 &
timeout $T compute-sanitizer --tool racecheck python3 bench/lab/conv_dense_features.py --quick --no-time > $OUT/racecheck_features.txt 2>&1 &
AITER_LITE_CONV_CL_CHUNK=32 timeout $T compute-sanitizer --tool racecheck python3 bench/lab/conv_cl_fwd.py --check --quick > $OUT/racecheck_16_c32.txt 2>&1 &
wait
for f in tests_plain tests_states memcheck_features racecheck_features racecheck_16_c32; do echo "== $f"; tail -n 2 $OUT/$f.txt; done
