#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck, initcheck and synccheck over sanitize_sweep.py's sweeps, one
# process per tool x op under a timeout, several at once; a line per run and a verdict last
# (sanitizer_summary.py). memcheck, racecheck and synccheck filter on kns=aiter_lite (our kernels'
# namespace); initcheck runs unfiltered and counts only our reports. PYTORCH_NO_CUDA_MEMORY_CACHING=1
# makes every tensor its own allocation. The canary (memcheck) must be reported. Logs: DIR (default
# /tmp/aiter_lite_sanitize), packed into $OUT/sanitize_logs.tgz when $OUT is set.
#
#   bash bench/reliability/sanitize.sh [--tools memcheck,racecheck,initcheck,synccheck] [--ops conv,matmul,wgmma]
#        [--jobs 5] [--timeout 300] [--quick] [--no-canary] [--no-pack] [--logs DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
TOOLS=memcheck,racecheck,initcheck,synccheck
OPS=conv,matmul,wgmma
JOBS=5
TIMEOUT=300
QUICK=""
CANARY=1
LOGS=/tmp/aiter_lite_sanitize
PACK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) TOOLS="$2"; shift 2 ;;
    --ops) OPS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --quick) QUICK="--quick"; shift ;;
    --no-canary) CANARY=0; shift ;;
    --logs) LOGS="$2"; shift 2 ;;
    --no-pack) PACK=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

SAN="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}"
if [ -z "$SAN" ]; then
  for c in /usr/local/cuda/bin/compute-sanitizer $(ls -d /usr/local/cuda-*/bin/compute-sanitizer 2>/dev/null | sort -V -r); do
    [ -x "$c" ] && SAN="$c" && break
  done
fi
if [ -z "$SAN" ]; then echo "SANITIZE FAIL: compute-sanitizer not found (set COMPUTE_SANITIZER)"; exit 1; fi
rm -rf "$LOGS"; mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
echo "sanitizer: $SAN ($("$SAN" --version 2>/dev/null | grep -i version | head -1))"

# Build outside the sanitizer (a no-op when the cache is warm).
python3 -m aiter_lite -q build module_causal_conv1d module_matmul --backend cuda || {
  echo "SANITIZE FAIL: the modules did not build"; exit 1; }

runs=()
IFS=, read -ra tool_list <<< "$TOOLS"
IFS=, read -ra op_list <<< "$OPS"
for tool in "${tool_list[@]}"; do
  for op in "${op_list[@]}"; do runs+=("$tool:$op"); done
done
if [ "$CANARY" = 1 ] && [[ ",$TOOLS," == *",memcheck,"* ]]; then runs+=("memcheck:canary"); fi

run_one() {  # tool target index
  local tool=$1 target=$2 i=$3 filter=() args=()
  [ "$tool" != initcheck ] && filter=(--kernel-name kns=aiter_lite)
  if [ "$target" = canary ]; then args=(--canary); else args=(--op "$target" $QUICK); fi
  local t0=$SECONDS
  timeout -k 15 "$TIMEOUT" "$SAN" --tool "$tool" "${filter[@]}" --error-exitcode 9 --launch-timeout 120 \
    --port $((49152 + 32 * i)) --print-limit 2000 --log-file "$LOGS/$tool-$target.san.log" \
    python3 bench/reliability/sanitize_sweep.py "${args[@]}" > "$LOGS/$tool-$target.app.log" 2>&1
  local rc=$?
  echo "$rc" > "$LOGS/$tool-$target.rc"
  echo "  done $tool $target: rc $rc, $((SECONDS - t0)) s"
}

echo "== ${#runs[@]} sanitizer runs, $JOBS at a time, ${TIMEOUT} s each at most"
i=0
for r in "${runs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_one "${r%%:*}" "${r#*:}" "$i" &
  i=$((i + 1))
done
wait

python3 bench/reliability/sanitizer_summary.py "$LOGS" --json "$LOGS/summary.json"
rc=$?
if [ "$PACK" = 1 ] && [ -n "${OUT:-}" ]; then
  tar czf "$OUT/sanitize_logs.tgz" -C "$LOGS" . && echo "logs: \$OUT/sanitize_logs.tgz"
fi
exit $rc
