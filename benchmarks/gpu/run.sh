#!/usr/bin/env bash
# The GPU check (issue 18): on one NVIDIA GPU with JAX, in at most 6 minutes, run the gpu-marked
# tests, then a `tuner search --backend jax --gpus 0` of the convnet over global batch 64 ... 8192
# x rules x float32/mixed_bfloat16 under a memory cap, then `tuner export`, and write to $OUT
# (default ./gpu-out): study.db, recommendation.json, summary.md, log.txt.
#
#   benchmarks/gpu/run.sh            the real check (one GPU; wheels in .whl/, see README.md)
#   benchmarks/gpu/run.sh --smoke    the same steps on 2 CPU replicas with a tiny spec (~1-2 min)
#
# Knobs (environment): TUNER_GPU_MEMORY_LIMIT (default 6GiB), TUNER_GPU_SEARCH_BUDGET_S (seconds
# the search may take before it is interrupted and the summary made of what finished; default
# 270), TUNER_GPU_TRIAL_TIMEOUT_S (default 150), TUNER_GPU_WHEELS (default .whl).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

SMOKE=0
case "${1:-}" in
    --smoke) SMOKE=1 ;;
    "") ;;
    *) echo "usage: benchmarks/gpu/run.sh [--smoke]" >&2; exit 2 ;;
esac

OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY="${PYTHON:-python3}"
WHEELS="${TUNER_GPU_WHEELS:-$ROOT/.whl}"
TRIAL_TIMEOUT_S="${TUNER_GPU_TRIAL_TIMEOUT_S:-150}"
if [ "$SMOKE" = 1 ]; then
    # Two CPU replicas; no single-device baseline (the GPU run has one device, so none either).
    SPEC=benchmarks/gpu/smoke.toml
    STUDY=convnet-smoke
    DEVICES=(--cpu-replicas 2 --no-baseline)
    CAP=()
    BUDGET_S="${TUNER_GPU_SEARCH_BUDGET_S:-900}"
else
    SPEC=benchmarks/gpu/spec.toml
    STUDY=convnet-gpu
    DEVICES=(--gpus 0)
    CAP=(--memory-limit "${TUNER_GPU_MEMORY_LIMIT:-6GiB}")
    BUDGET_S="${TUNER_GPU_SEARCH_BUDGET_S:-270}"
fi

stage() { echo; echo "=== $(date -u +%H:%M:%S) $*"; }

main() {
    local started=$SECONDS
    stage "tuner GPU check (smoke=$SMOKE) into $OUT"
    rm -f "$OUT/study.db" "$OUT/recommendation.json" "$OUT/summary.md"

    # The GPU machine has JAX but not Keras, Optuna or the rest: they come as wheels, installed
    # into a folder of their own (nothing of the machine's is changed). tuner itself runs from
    # this working tree (PYTHONPATH), so it needs no install.
    local site=/tmp/tuner-gpu-site
    if compgen -G "$WHEELS/*.whl" >/dev/null; then
        stage "installing $(ls "$WHEELS"/*.whl | wc -l) wheels from $WHEELS into $site"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$site" "$WHEELS"/*.whl || return 1
        export PYTHONPATH="$site:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
    else
        stage "no wheels in $WHEELS: using the installed packages"
        export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
    fi
    export PYTHONUNBUFFERED=1 KERAS_BACKEND=jax
    # Compiled train steps (with XLA's autotuning) are cached across trial processes: the second
    # rule at a batch and precision reuses the first one's executable (summary.md shows both).
    export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-/tmp/tuner-gpu-jax-cache}"
    export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
    "$PY" - <<'EOF'
import platform
from importlib import metadata
names = ("jax", "jaxlib", "keras", "optuna", "numpy", "tensorflow")
found = {}
for name in names:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        found[name] = "not installed"
print("python", platform.python_version(), " ".join(f"{k} {v}" for k, v in found.items()))
EOF

    stage "pytest -m gpu tests/gpu"
    timeout -k 10 150 "$PY" -m pytest -m gpu tests/gpu -q -rs -p no:cacheprovider --timeout 120
    local tests_rc=$?
    echo "gpu tests exit code: $tests_rc"

    stage "tuner search ($SPEC, interrupted after ${BUDGET_S}s)"
    local storage="sqlite:///$OUT/study.db" search_started=$SECONDS
    timeout -s INT -k 30 "$BUDGET_S" "$PY" -m tuner search --spec "$SPEC" --backend jax \
        "${DEVICES[@]}" "${CAP[@]}" --storage "$storage" --study-name "$STUDY" \
        --trial-timeout "$TRIAL_TIMEOUT_S"
    local search_rc=$? search_s=$((SECONDS - search_started))
    echo "search exit code: $search_rc after ${search_s}s"

    stage "tuner export"
    "$PY" -m tuner export --storage "$storage" --study-name "$STUDY" \
        --output "$OUT/recommendation.json"
    echo "export exit code: $?"

    stage "summary"
    "$PY" benchmarks/gpu/summary.py --storage "$storage" --study-name "$STUDY" \
        --recommendation "$OUT/recommendation.json" --output "$OUT/summary.md" \
        ${CAP[1]:+--memory-limit "${CAP[1]}"} --search-seconds "$search_s" \
        --search-exit "$search_rc" --tests-exit "$tests_rc" \
        --total-seconds $((SECONDS - started)) || return 1
    cat "$OUT/summary.md"
    stage "done in $((SECONDS - started))s: $OUT"
    [ "$search_rc" = 0 ] && [ "$tests_rc" = 0 ]
}

main 2>&1 | tee "$OUT/log.txt"
