#!/bin/bash
# One device call (session 18, issue 19: seq_idx on x [B, D, L] through the plain kernels plus a fix-up kernel):
# this tree and the tree in .peers/old_tree.tar (`git archive -o .peers/old_tree.tar BASE`) built side by side,
# bench/lab/conv_seq_idx_split.py old/new in alternation (ROUNDS, default 2), then this tree's GPU tests of the
# states file (TESTS, default all), compute-sanitizer memcheck and racecheck on the seq_idx tests. Every step has a
# timeout. Run from the repository root with .peers carried; logs under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
NEW=$PWD OLD=/tmp/old_tree
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L" "$OLD"
tar -xf .peers/old_tree.tar -C "$OLD"
nvidia-smi -L; date -u
t0=$SECONDS
build() {  # ROOT CACHE LOG
  (cd "$1" && PYTHONPATH=$1 AITER_LITE_CACHE_DIR=$2 AITER_LITE_LOCK_DIR=$2.locks timeout 200 \
     /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d --backend cuda) > "$3" 2>&1
  echo "rc=$?" >> "$3"
}
build "$NEW" /tmp/c_new "$L/build_new.txt" &
build "$OLD" /tmp/c_old "$L/build_old.txt" &
wait
for f in "$L"/build_*.txt; do echo "$(basename "$f"): $(tail -n 2 "$f" | tr '\n' ' ')"; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 90 python3 "$NEW/bench/lab/conv_seq_idx_split.py" old) >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new timeout 90 python3 bench/lab/conv_seq_idx_split.py new >> "$L/ab.txt" 2>> "$L/ab_err.txt"
done
echo "A/B done at $((SECONDS - t0)) s"; tail -n 5 "$L/ab_err.txt"
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout 300 $P tests/test_gpu_causal_conv1d_states.py -k "${TESTS:-not zz}" > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 15
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "${SAN_TESTS:-padding_tokens or dense_kernel_states_and_seq_idx}" > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 6
timeout 90 compute-sanitizer --tool racecheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "${RACE_TESTS:-padding_tokens and contiguous}" > "$L/racecheck.txt" 2>&1
echo "racecheck rc=$? at $((SECONDS - t0)) s"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 4
echo; cat "$L/ab.txt"
