#!/usr/bin/env bash
# The reliability suite in one device call (docs/reliability.md): bench/gpu.sh reliability [full|quick|cpu].
# Phases, each under a timeout cut to what is left of BUDGET_S (default 570 s), a summary last:
#   ranks     ranks.py: RANKS_NPROC (8) ranks on a cold cache   nodes  ranks.py --nodes 2: a lock dir per node
#   pytest    the reliability and bad-input GPU tests           sanitize  sanitize.py --quick over every tool x op
#   soak      soak.py for SOAK_MIN minutes (2) on the last GPU
# quick: 4 ranks, a 15 s soak, memcheck over the conv sweep and the canary. cpu: the plumbing without a GPU.
# PHASES=ranks,nodes,... picks phases and their order. Figures go to $OUT (ranks*.json, soak.json,
# summary.txt, reliability_logs.tgz), logs to $W.
set -uo pipefail
cd "$(dirname "$0")/../.."
MODE="${1:-full}" OUT="${OUT:-/tmp/out}" W="${W:-/tmp/aiter_rel}" BUDGET_S="${BUDGET_S:-570}" T0=$SECONDS
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
INFO=$(python3 -c "import torch; n = torch.cuda.device_count()
print(n, f'{torch.cuda.get_device_name(0) if n else \"cpu\"} x{n}, torch {torch.__version__}')")  # one torch import
GPUS=${INFO%% *}
DEV=cuda SOAK_DEV="cuda:$((GPUS - 1))" SAN_ARGS=(--quick --jobs 9)
case "$MODE" in
  full) PHASES="${PHASES:-ranks,nodes,pytest,sanitize,soak}" ;;
  quick) PHASES="${PHASES:-ranks,soak,sanitize}" RANKS_NPROC="${RANKS_NPROC:-4}" SOAK_MIN="${SOAK_MIN:-0.25}"
    SAN_ARGS=(--quick --tools memcheck --ops conv) ;;
  cpu) PHASES="${PHASES:-ranks,nodes,soak}" DEV=cpu SOAK_DEV=cpu RANKS_NPROC="${RANKS_NPROC:-4}" SOAK_MIN="${SOAK_MIN:-0.5}" ;;
  *) echo "usage: session.sh [full|quick|cpu]" >&2; exit 2 ;;
esac
RANKS_NPROC="${RANKS_NPROC:-8}" SOAK_MIN="${SOAK_MIN:-2}"
rm -rf "$W"; mkdir -p "$W" "$OUT"
status=0
note() { echo "$*" | tee -a "$W/summary.txt"; }
# cap N: N seconds, or what is left of the budget less a margin; start PHASE N: false (noted) under N s left.
cap() { local l=$((BUDGET_S - (SECONDS - T0) - 10)); echo $((l < $1 ? l : $1)); }
start() { [ "$(cap 9999)" -ge "$2" ] && echo "== $1 ($(cap "$3") s max)" && return 0; note "$1: skipped, no time left"; status=1; return 1; }
# phase NAME VERDICT_PREFIX MAX_S COMMAND...: run it under the cap, note its rc and verdict line.
phase() {
  local name=$1 prefix=$2 max=$3; shift 3
  timeout -k 10 "$(cap "$max")" "$@" 2>&1 | tee "$W/$name.txt" | tail -n 14
  local rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || status=1
  note "$name: rc $rc | $(grep -h "^$prefix" "$W/$name.txt" | tail -n 1 | cut -c1-200 || true)"
}
note "env: ${INFO#* }, mode $MODE"

CACHE="$W/ranks/cache"  # the ranks phase builds it cold; the later phases reuse it warm
for ph in ${PHASES//,/ }; do
  [ -d "$CACHE" ] && export AITER_LITE_CACHE_DIR="$CACHE"
  case "$ph" in
    ranks) start ranks 60 200 && phase ranks RANKS 200 python3 bench/reliability/ranks.py --nproc "$RANKS_NPROC" \
      --device $DEV --work-dir "$W/ranks" --json "$OUT/ranks.json" ;;
    nodes) start nodes 60 220 && phase nodes RANKS 220 python3 bench/reliability/ranks.py --nproc "$RANKS_NPROC" \
      --nodes 2 --device $DEV --work-dir "$W/nodes" --json "$OUT/ranks_2nodes.json" ;;
    pytest) start pytest 60 240 && phase pytest "[0-9]* \(passed\|failed\)" 240 python3 -m pytest -q -m gpu \
      -p no:cacheprovider tests/test_gpu_reliability.py tests/test_bad_inputs.py ;;
    sanitize) start sanitize 60 240 && phase sanitize "SANITIZE \(PASS\|FAIL\)" 240 python3 bench/reliability/sanitize.py \
      "${SAN_ARGS[@]}" --timeout $(($(cap 240) - 20)) --logs "$W/sanitize" ;;
    soak) start soak 45 600 || continue  # SOAK_MIN, or the time left less start-up, warm-up and report
      minutes=$(python3 -c "print(round(max(0.0, min($SOAK_MIN, ($(cap 9999) - 90) / 60)), 2))")
      phase soak SOAK 600 python3 bench/reliability/soak.py --minutes "$minutes" --device "$SOAK_DEV" --json "$OUT/soak.json" ;;
    *) note "$ph: no such phase"; status=1 ;;
  esac
done
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/reliability_logs.tgz" -C "$W" --exclude=cache . 2>/dev/null
echo; echo "== summary ($((SECONDS - T0)) s)"; cat "$W/summary.txt"
echo "SESSION $([ $status = 0 ] && echo PASS || echo FAIL) ($MODE)"
exit $status
