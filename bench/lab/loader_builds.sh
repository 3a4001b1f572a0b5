# Issue 22 cold builds on the GPU host, as docs/jit.md reports them: each CUDA module alone from an empty
# cache dir, one after the other, then `python3 -m aiter_lite build --all` from another empty one (all
# under /usr/bin/time: wall, and user + sys CPU seconds of every compiler it ran); then the GPU tests of
# the paths this session's cuts touch, on the --all build. Logs under $OUT, the summary last.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD AITER_LITE_LOCK_DIR=/tmp/b_locks
L=${OUT:-/tmp/out}
mkdir -p "$L"
t0=$SECONDS
timed() {  # LOG CACHE_DIR ARGS...
  local log=$1 dir=$2; shift 2
  rm -rf "$dir"
  AITER_LITE_CACHE_DIR=$dir timeout 100 /usr/bin/time -f "%e s wall, %U+%S CPU s" \
    python3 -m aiter_lite -q build "$@" > "$log" 2>&1
  echo "rc=$?" >> "$log"
}
timed "$L/b_conv.txt" /tmp/b_conv module_causal_conv1d --backend cuda
timed "$L/b_matmul.txt" /tmp/b_matmul module_matmul --backend cuda
timed "$L/b_all.txt" /tmp/b_all --all
echo "builds done at $((SECONDS - t0)) s" >> "$L/b_steps.txt"
export AITER_LITE_CACHE_DIR=/tmp/b_all
left=$((230 - (SECONDS - t0)))
{
  timeout $left python3 -m pytest -q -x tests/test_gpu_causal_conv1d.py -k "not past_2_31" 2>&1 | tail -n 4 | sed 's/^/conv: /' &
  timeout $left python3 -m pytest -q -x tests/test_gpu_conv_shards.py 2>&1 | tail -n 4 | sed 's/^/shards: /' &
  timeout $left python3 -m pytest -q -x tests/test_gpu_matmul.py \
    -k "every_config or config_large or many_tiles or refused or tensor_core" 2>&1 | tail -n 4 | sed 's/^/matmul: /' &
  timeout $left python3 -m pytest -q -x tests/test_gpu_autotune.py -k "graph_capture" 2>&1 | tail -n 3 | sed 's/^/autotune: /' &
  wait
} > "$L/b_tests.txt"
echo "tests done at $((SECONDS - t0)) s" >> "$L/b_steps.txt"
cat "$L/b_steps.txt" "$L/b_tests.txt"
for f in "$L"/b_conv.txt "$L"/b_matmul.txt "$L"/b_all.txt; do echo "$(basename "$f"): $(tail -n 2 "$f" | tr '\n' ' ')"; done
