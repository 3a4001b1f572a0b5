#!/usr/bin/env bash
# Issue 7 in one device call (docs/reliability.md): run through bench/gpu.sh reliability [1gpu|2gpu|
# collect]; `session.sh cpu` runs the plumbing without a GPU. Prints a summary last; figures and logs go
# to $OUT (summary.txt, ranks.json, ranks_2nodes.json, pytest.txt, sanitize_summary.json, soak.json,
# logs.tgz). Phases, each under a timeout cut to what is left of BUDGET_S (default 570):
#   ranks     ranks.py: 8 ranks on a cold cache       nodes     ranks.py --nodes 2, a lock dir per node
#   pytest    the reliability and bad-input GPU tests sanitize  sanitize.sh --quick (1gpu only)
#   soak      soak.py --minutes $SOAK_MIN (default 2; 2gpu: 1 minute on cuda:1)
# Environment: PHASES=ranks,nodes,...; BUDGET_S; SOAK_MIN; SOAK_BG_MIN (the soak in the background,
# reported by `collect`); RANKS_NPROC; W (work dir); CACHE_DIR.
set -uo pipefail
cd "$(dirname "$0")/../.."
MODE="${1:-1gpu}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
W="${W:-/tmp/aiter_rel}"
BG="${BG_DIR:-/tmp/aiter_rel_soak}"  # the background soak lives outside $W
BUDGET_S="${BUDGET_S:-570}"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
T0=$SECONDS

left() { echo $((BUDGET_S - (SECONDS - T0))); }
# cap N: N seconds, or what is left of the budget (less a margin) if that is less.
cap() { local want=$1 l; l=$(( $(left) - 10 )); [ "$l" -lt "$want" ] && echo "$l" || echo "$want"; }
# room PHASE N: true if at least N seconds are left for PHASE; otherwise note it as skipped.
room() { if [ "$(cap 9999)" -ge "$2" ]; then return 0; fi; note "$1: skipped, only $(left) s of the budget left"; status=1; return 1; }

if [ "$MODE" = collect ]; then
  # Wait for the background soak of a previous call, then report it.
  echo "== waiting for the background soak in $BG"
  while [ ! -f "$BG/rc" ] && [ "$(left)" -gt 15 ]; do sleep 5; done
  if [ -f "$BG/rc" ]; then
    cp "$BG/soak.json" "$OUT/soak.json" 2>/dev/null
    tail -12 "$BG/soak.log"
    echo "soak rc $(cat "$BG/rc")"
    tar czf "$OUT/logs.tgz" -C "$BG" . 2>/dev/null
  else
    echo "SOAK (background) still running or lost: $(tail -2 "$BG/soak.log" 2>/dev/null)"
  fi
  exit 0
fi

rm -rf "$W"; mkdir -p "$W"
SUMMARY="$W/summary.txt"; : > "$SUMMARY"
status=0
note() { echo "$*" | tee -a "$SUMMARY"; }

RANKS_NPROC="${RANKS_NPROC:-8}"
case "$MODE" in
  1gpu) DEFAULT_PHASES=ranks,nodes,pytest,sanitize,soak; SOAK_MIN="${SOAK_MIN:-2}"; DEV=auto; SOAK_DEVICE=cuda ;;
  2gpu) DEFAULT_PHASES=ranks,nodes,pytest,soak; SOAK_MIN="${SOAK_MIN:-1}"; DEV=auto; SOAK_DEVICE=cuda:1 ;;
  cpu) DEFAULT_PHASES=ranks,nodes,pytest,soak; SOAK_MIN="${SOAK_MIN:-0.5}"; DEV=cpu; SOAK_DEVICE=cpu ;;
  *) echo "usage: session.sh [1gpu|2gpu|cpu|collect]" >&2; exit 2 ;;
esac
[ -n "${SOAK_BG_MIN:-}" ] && DEFAULT_PHASES="${DEFAULT_PHASES/,soak/}"  # the soak runs in the background
PHASES=",${PHASES:-$DEFAULT_PHASES},"
want() { [[ "$PHASES" == *",$1,"* ]]; }

echo "== environment"
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'gpus', torch.cuda.device_count())"
  (nvcc --version | tail -2 | head -1) 2>/dev/null
  (compute-sanitizer --version | grep -i version | head -1) 2>/dev/null || echo "compute-sanitizer not on PATH"
  nproc
} 2>&1 | tee "$W/env.txt"
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
GPU_NAME=$(python3 -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')")
note "env: $GPU_NAME x$GPUS, $(grep -m1 '^python' "$W/env.txt"), mode $MODE"
if [ "$MODE" = 2gpu ] && [ "$GPUS" -lt 2 ]; then note "2gpu mode but only $GPUS GPU(s) visible"; fi

# The cache of the `ranks` phase (emptied first: it must be cold); later phases, and a later call on
# the same machine with PHASES=soak, reuse it warm.
CACHE="${CACHE_DIR:-/tmp/aiter_rel_cache}"

if want ranks && room ranks 60; then
  rm -rf "$CACHE"
  echo "== ranks: $RANKS_NPROC processes, cold cache ($(cap 200) s max)"
  timeout -k 10 "$(cap 200)" python3 bench/reliability/ranks.py --nproc "$RANKS_NPROC" --device $DEV --cache-dir "$CACHE" \
    --work-dir "$W/ranks" --json "$OUT/ranks.json" 2>&1 | tee "$W/ranks.txt" | tail -16
  rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
  note "ranks ($RANKS_NPROC, 1 node, cold): rc $rc | $(grep -h '^RANKS' "$W/ranks.txt" || echo 'no verdict (timeout?)')"
  grep -h '^module_' "$W/ranks.txt" | sed 's/^/  /' | tee -a "$SUMMARY"
fi

if want nodes && room nodes 60; then
  echo "== ranks: 2 simulated nodes, $RANKS_NPROC ranks, shared cold cache, a lock dir per node ($(cap 220) s max)"
  timeout -k 10 "$(cap 220)" python3 bench/reliability/ranks.py --nproc "$RANKS_NPROC" --nodes 2 --device $DEV \
    --work-dir "$W/nodes" \
    --json "$OUT/ranks_2nodes.json" 2>&1 | tee "$W/nodes.txt" | tail -16
  rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
  note "ranks ($RANKS_NPROC, 2 nodes, cold): rc $rc | $(grep -h '^RANKS' "$W/nodes.txt" || echo 'no verdict (timeout?)')"
  grep -h '^module_' "$W/nodes.txt" | sed 's/^/  /' | tee -a "$SUMMARY"
fi

# Later phases use the cache the first phase built (or build it now if `ranks` was not run).
export AITER_LITE_CACHE_DIR="$CACHE"

if [ -n "${SOAK_BG_MIN:-}" ]; then
  rm -rf "$BG"; mkdir -p "$BG"
  setsid bash -c "AITER_LITE_CACHE_DIR='$CACHE' python3 bench/reliability/soak.py --minutes $SOAK_BG_MIN \
    --device $SOAK_DEVICE --json '$BG/soak.json' > '$BG/soak.log' 2>&1; echo \$? > '$BG/rc'" < /dev/null &
  note "soak ($SOAK_BG_MIN min) started in the background on $SOAK_DEVICE; collect it with: session.sh collect"
fi

if want pytest && room pytest 60; then
  echo "== pytest -m gpu ($(cap 240) s max)"
  timeout -k 10 "$(cap 240)" python3 -m pytest -q -m gpu -p no:cacheprovider --junitxml="$W/pytest.xml" \
    tests/test_gpu_reliability.py tests/test_bad_inputs.py 2>&1 | tee "$OUT/pytest.txt" | tail -25
  rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
  note "pytest: rc $rc | $(grep -E '[0-9]+ (passed|failed|skipped|errors?|deselected)' "$OUT/pytest.txt" | tail -1)"
  grep -E '^(FAILED|ERROR)' "$OUT/pytest.txt" | head -10 | sed 's/^/  /' | tee -a "$SUMMARY"
fi

if want sanitize && room sanitize 90; then
  t=$(cap 240)
  echo "== sanitize ($t s max)"
  timeout -k 10 "$t" bash bench/reliability/sanitize.sh --quick --jobs 9 --timeout $((t - 40)) \
    --logs "$W/sanitize" --no-pack 2>&1 | tee "$W/sanitize.txt" | tail -14
  rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
  cp "$W/sanitize/summary.json" "$OUT/sanitize_summary.json" 2>/dev/null
  note "sanitize: rc $rc | $(grep -h '^SANITIZE \(PASS\|FAIL\)' "$W/sanitize.txt" || echo 'no verdict (timeout?)')"
  grep -h '^SANITIZE ' "$W/sanitize.txt" | grep -v '^SANITIZE \(PASS\|FAIL\)' | cut -c1-150 | sed 's/^/  /' \
    | tee -a "$SUMMARY"
fi

if want soak; then
  if [ "$SOAK_DEVICE" != cpu ]; then  # build first (a no-op when warm), so the soak gets the time left
    timeout -k 10 "$(cap 300)" python3 -m aiter_lite -q build module_causal_conv1d module_matmul --backend cuda
  fi
  room=$(( $(left) - 100 ))  # start-up, warm-up (~10-20 s on a GPU), the summary
  minutes=$(python3 -c "print(round(max(0.0, min($SOAK_MIN, $room / 60)), 2))")
  if python3 -c "import sys; sys.exit(0 if $minutes >= 0.5 else 1)"; then
    echo "== soak: $minutes min on $SOAK_DEVICE"
    timeout -k 10 "$(cap $(python3 -c "print(int($minutes * 60 + 90))"))" python3 bench/reliability/soak.py \
      --minutes "$minutes" --device "$SOAK_DEVICE" --json "$OUT/soak.json" 2>&1 | tee "$W/soak.txt" | tail -12
    rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
    note "soak ($minutes min): rc $rc | $(grep -h '^SOAK' "$W/soak.txt" | cut -c1-200 || echo 'no verdict (timeout?)')"
    grep -h '^growth after warm-up' "$W/soak.txt" | sed 's/^/  /' | tee -a "$SUMMARY"
  else
    note "soak: skipped, only $(left) s left"; status=1
  fi
fi

cp "$SUMMARY" "$OUT/summary.txt"
tar czf "$OUT/logs.tgz" -C "$W" --exclude='*/cache' . 2>/dev/null
echo
echo "== summary ($((SECONDS - T0)) s)"
cat "$SUMMARY"
echo "SESSION $([ $status = 0 ] && echo PASS || echo FAIL) ($MODE)"
exit $status
