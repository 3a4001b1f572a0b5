# Issue 22 build-time cuts, on the GPU host in one call (run from this checkout, with the tree it is
# compared against at $OLD, default the repository root when this checkout is a worktree of it):
#   1. cold builds from one empty cache: this tree's module_causal_conv1d and module_matmul, and the old
#      tree's module_causal_conv1d, side by side (/usr/bin/time each);
#   2. A/B of the conv forward at widths 4..8 (bench/lab/wide_width_ab.py), old and new in alternation, twice;
#   3. the GPU tests of the paths the cuts touch, in parallel processes.
# Logs under $OUT; the A/B table last.
set -uo pipefail
NEW=$PWD
OLD=${OLD:-$(cd ../.. && pwd)}
export PYTHONUNBUFFERED=1 AITER_LITE_CACHE_DIR=/tmp/ab_cache AITER_LITE_LOCK_DIR=/tmp/ab_locks
L=${OUT:-/tmp/out}
mkdir -p "$L"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$L/device.txt" 2>&1
t0=$SECONDS
build() {  # ROOT MODULE LOG
  (cd "$1" && PYTHONPATH=$1 timeout 150 /usr/bin/time -f "%e s wall, %U+%S CPU s" \
     python3 -m aiter_lite -q build "$2" --backend cuda) > "$3" 2>&1
  echo "rc=$?" >> "$3"
}
build "$NEW" module_causal_conv1d "$L/build_new_conv.txt" &
build "$NEW" module_matmul "$L/build_new_matmul.txt" &
build "$OLD" module_causal_conv1d "$L/build_old_conv.txt" &
wait
echo "builds done at $((SECONDS - t0)) s" | tee -a "$L/steps.txt"
for r in 1 2; do
  (cd "$OLD" && PYTHONPATH=$OLD timeout 45 python3 "$NEW/bench/lab/wide_width_ab.py" old --reps 20) >> "$L/ab_rows.txt" 2>> "$L/ab_err.txt"
  PYTHONPATH=$NEW timeout 45 python3 bench/lab/wide_width_ab.py new --reps 20 >> "$L/ab_rows.txt" 2>> "$L/ab_err.txt"
done
echo "A/B done at $((SECONDS - t0)) s" | tee -a "$L/steps.txt"
export PYTHONPATH=$NEW
left=$((225 - (SECONDS - t0)))
timeout $left python3 -m pytest -q -x tests/test_gpu_causal_conv1d.py -k "not past_2_31" > "$L/t_conv.txt" 2>&1 &
timeout $left python3 -m pytest -q -x tests/test_gpu_conv_shards.py > "$L/t_shards.txt" 2>&1 &
timeout $left python3 -m pytest -q -x tests/test_gpu_matmul.py \
  -k "every_config or config_large or many_tiles or refused or tensor_core" > "$L/t_matmul.txt" 2>&1 &
timeout $left python3 -m pytest -q -x tests/test_gpu_autotune.py -k "graph_capture" > "$L/t_autotune.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s" | tee -a "$L/steps.txt"
for f in "$L"/build_*.txt; do echo "$(basename "$f"): $(tail -2 "$f" | tr '\n' ' ')"; done
for f in "$L"/t_*.txt; do echo "$(basename "$f"): $(tail -1 "$f")"; done
python3 bench/lab/wide_width_ab.py --compare old new "$L/ab_rows.txt" | tee "$L/ab_table.txt"
