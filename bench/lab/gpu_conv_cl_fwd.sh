#!/bin/bash
# One device call for the channel-last forward (bench/lab/conv_cl_fwd.py): build, the lab correctness sweep with
# each staged lane width, graph timings of each kernel choice (one process each, nothing else on the GPU), then
# the forward GPU test files and compute-sanitizer memcheck/racecheck on the quick sweep, in parallel. Run from
# the repository root with .peers present; logs in $OUT. TIME_CFGS: the kernel choices timed.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}
nvidia-smi -L; date -u
python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > $OUT/peers.txt 2>&1 && export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
( time python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) 2>&1 | tail -3
for cfg in 8 16; do
  AITER_LITE_CONV_CL_FWD=$cfg timeout ${CHECK_S:-60} python3 bench/lab/conv_cl_fwd.py --check > $OUT/check_$cfg.txt 2>&1 &
done
wait; tail -n 3 $OUT/check_*.txt
for cfg in ${TIME_CFGS:-regs 8 16}; do
  echo "== time $cfg"
  AITER_LITE_CONV_CL_FWD=$cfg timeout ${TIME_S:-40} python3 bench/lab/conv_cl_fwd.py --time --out $OUT/cl_$cfg.json > $OUT/time_$cfg.txt 2>&1
  tail -n 2 $OUT/time_$cfg.txt
done
python3 bench/lab/conv_cl_fwd.py --table $(for c in ${TIME_CFGS:-regs 8 16}; do echo $OUT/cl_$c.json; done) | tee $OUT/table.md
T=${TEST_S:-80}
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d.py -k "not past_2_31" > $OUT/tests_plain.txt 2>&1 &
timeout $T python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_states.py -k "not matches_cpu_kernels" > $OUT/tests_states.txt 2>&1 &
AITER_LITE_CONV_CL_FWD=8 timeout $T compute-sanitizer --tool memcheck python3 bench/lab/conv_cl_fwd.py --check --quick > $OUT/memcheck_8.txt 2>&1 &
AITER_LITE_CONV_CL_FWD=16 timeout $T compute-sanitizer --tool racecheck python3 bench/lab/conv_cl_fwd.py --check --quick > $OUT/racecheck_16.txt 2>&1 &
AITER_LITE_CONV_CL_FWD=8 timeout $T compute-sanitizer --tool racecheck python3 bench/lab/conv_cl_fwd.py --check --quick > $OUT/racecheck_8.txt 2>&1 &
wait
for f in tests_plain tests_states memcheck_8 racecheck_16 racecheck_8; do echo "== $f"; tail -n 3 $OUT/$f.txt; done
