# Steps the session device scripts share (sourced first by gpu_session17.sh, gpu_session18*.sh, gpu_session19*.sh,
# from the repository root): sourcing it sets the shell options, the log folder $L (under $OUT) and the start
# time $t0, and prints the GPU; every step below runs under a timeout.
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi -L; date -u
t0=$SECONDS

# build_tree ROOT CACHE LOG: the conv module of the tree at ROOT built into the cache CACHE (BACKEND, default
# cuda); wall and CPU time, then its rc, in LOG.
build_tree() {
  (cd "$1" && PYTHONPATH=$1 AITER_LITE_CACHE_DIR=$2 AITER_LITE_LOCK_DIR=$2.locks timeout 200 \
     /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d \
     --backend "${BACKEND:-cuda}") > "$3" 2>&1
  echo "rc=$?" >> "$3"
}

# build_trees NEW OLD: .peers/old_tree.tar unpacked into OLD, then NEW and OLD built side by side into /tmp/c_new
# and /tmp/c_old (logs build_new.txt, build_old.txt).
build_trees() {
  mkdir -p "$2" && tar -xf .peers/old_tree.tar -C "$2"
  build_tree "$1" /tmp/c_new "$L/build_new.txt" &
  build_tree "$2" /tmp/c_old "$L/build_old.txt" &
  wait
  for f in "$L"/build_new.txt "$L"/build_old.txt; do echo "$(basename "$f"): $(tail -n 2 "$f" | tr '\n' ' ')"; done
}

# peers_and_trees NEW OLD: the peers (bench/peer_cache.py: causal-conv1d with its backward, fla) unpacked into
# /tmp/peers (log peers.txt) while build_trees builds NEW and OLD; then the peers on PYTHONPATH.
peers_and_trees() {
  ( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
  build_trees "$1" "$2"
  wait
  export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
}

# states_checks TESTS SAN_TESTS RACE_TESTS TEST_S SAN_S RACE_S: the GPU tests of tests/test_gpu_causal_conv1d_states.py
# selected by TESTS (a pytest -k expression), then compute-sanitizer memcheck on SAN_TESTS and racecheck on
# RACE_TESTS, one after another (in parallel they ran out of time in session 17), each under its timeout in
# seconds; logs tests.txt, memcheck.txt, racecheck.txt, their summary lines printed.
states_checks() {
  local P="python3 -m pytest -q -m gpu -p no:cacheprovider" F=tests/test_gpu_causal_conv1d_states.py
  timeout "$4" $P "$F" -k "$1" > "$L/tests.txt" 2>&1
  echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 15
  timeout "$5" compute-sanitizer --tool memcheck --print-limit 20 $P -s "$F" -k "$2" > "$L/memcheck.txt" 2>&1
  echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 6
  timeout "$6" compute-sanitizer --tool racecheck --print-limit 20 $P -s "$F" -k "$3" > "$L/racecheck.txt" 2>&1
  echo "racecheck rc=$? at $((SECONDS - t0)) s"
  grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 4
}

# ab_rounds SCRIPT SECONDS: bench/lab/SCRIPT run ROUNDS times (default 2) from the old tree (label old, its
# package and cache /tmp/c_old) and from this one (label new), alternating; tables to ab.txt, stderr to ab_err.txt.
# The script must import aiter_lite before bench/common.py, which puts its own checkout first on sys.path.
ab_rounds() {
  for r in $(seq 1 "${ROUNDS:-2}"); do
    (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout "$2" python3 "$NEW/bench/lab/$1" old) \
      >> "$L/ab.txt" 2>> "$L/ab_err.txt"
    PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new timeout "$2" python3 "bench/lab/$1" new >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  done
  echo "A/B done at $((SECONDS - t0)) s"; tail -n 5 "$L/ab_err.txt"
}

# gpu_checks "TEST FILES" "MEMCHECK FILES" MEM_K TEST_S MEM_S: the GPU tests of TEST FILES (tests.txt), then
# compute-sanitizer memcheck on the tests of MEMCHECK FILES selected by MEM_K (memcheck.txt), each under its timeout,
# one after the other; each log ends with its rc line. check_summary prints their summary lines.
gpu_checks() {
  local P="python3 -m pytest -q -m gpu -p no:cacheprovider"
  timeout "$4" $P $1 > "$L/tests.txt" 2>&1
  echo "tests rc=$? at $((SECONDS - t0)) s" >> "$L/tests.txt"
  timeout "$5" compute-sanitizer --tool memcheck --print-limit 20 $P -s $2 -k "$3" > "$L/memcheck.txt" 2>&1
  echo "memcheck rc=$? at $((SECONDS - t0)) s" >> "$L/memcheck.txt"
}
check_summary() {
  grep -E "^FAILED|^ERROR|passed|failed|tests rc" "$L/tests.txt" | tail -n 12
  grep -hE "ERROR SUMMARY|Invalid|passed|failed|memcheck rc" "$L/memcheck.txt" | tail -n 4
}

# peers_and_tree ROOT CACHE: the peers unpacked into /tmp/peers (log peers.txt) while the tree at ROOT builds into CACHE
# (log build_new.txt); then the peers on PYTHONPATH.
peers_and_tree() {
  ( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
  build_tree "$1" "$2" "$L/build_new.txt"
  echo "build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
  wait
  export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
}

# ab_two_gpus SCRIPT: on a machine of two GPUs, bench/lab/SCRIPT from $OLD (cache /tmp/c_old) on GPU 0 and from $NEW
# (/tmp/c_new) on GPU 1 at once, then swapped; labels TREE-gpuG-rR, each run's output in $L/ab_TREE_R.txt. The trees
# come from build_trees (peers_and_trees).
ab_two_gpus() {
  ab_one() {  # ab_one TREE GPU ROUND
    local root=$NEW; [ "$1" = old ] && root=$OLD
    (cd "$root" && CUDA_VISIBLE_DEVICES=$2 PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$1 timeout 150 python3 \
      "$NEW/bench/lab/$SCRIPT" "$1-gpu$2-r$3") > "$L/ab_$1_$3.txt" 2>&1
  }
  local SCRIPT=$1
  ab_one old 0 1 & ab_one new 1 1 & wait
  ab_one new 0 2 & ab_one old 1 2 & wait
  echo "A/B ($SCRIPT) done at $((SECONDS - t0)) s"
}

# cp_two_gpus [BENCH ARGS]: on a machine of two GPUs, tests/test_gpu_distributed_cp.py (tests_cp.txt), then
# bench/bench_cp_conv.py under torchrun with BENCH ARGS (cp.txt); their summary lines and the bench's table printed.
# With --profile DIR, each of the last two ranks' CP profiles as kernel and device time.
cp_two_gpus() {
  timeout 200 $P tests/test_gpu_distributed_cp.py > "$L/tests_cp.txt" 2>&1
  echo "cp tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_cp.txt" | tail -n 4
  timeout 240 torchrun --nproc-per-node=2 bench/bench_cp_conv.py "$@" > "$L/cp.txt" 2>&1
  echo "cp rc=$? at $((SECONDS - t0)) s"
  grep -E "^\|" "$L/cp.txt"
  for f in "$L"/profile/*_cp_rank*.txt; do
    [ -f "$f" ] || continue
    echo "== $f"; grep -E "^(void|ncclDev|at::)" "$f" | python3 -c "import sys
for l in sys.stdin: c = l[70:].split(); print(l[:70].strip()[-50:], c[5], c[-1])"
  done
}
