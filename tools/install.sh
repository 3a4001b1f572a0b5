#!/usr/bin/env bash
# Installs aiter_lite (editable) and what it needs into the current Python environment.
# torch is installed only when missing, pinned to the CPU build (an unpinned torch requirement
# pulls several GB of CUDA packages); set AITER_LITE_TORCH_SPEC to choose another.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  echo "torch not found: installing ${AITER_LITE_TORCH_SPEC:-torch==2.13.0}" >&2
  "$PYTHON" -m pip install -q "${AITER_LITE_TORCH_SPEC:-torch==2.13.0}"
fi
"$PYTHON" -m pip install -q -e ".[test]"
