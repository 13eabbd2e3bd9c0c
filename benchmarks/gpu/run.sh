#!/usr/bin/env bash
# The GPU check (issues 18 and 33): on one NVIDIA GPU with JAX, in about 6 minutes, run
#   1. a `tuner search --backend jax --gpus 0` of the convnet over global batch 64 ... 8192 x
#      rules x float32/mixed_bfloat16 under a memory cap, then `tuner export` and the summary;
#   2. the gpu-marked tests;
#   3. the compile cache: the same program compiled twice with the cache off (each trial's
#      `timings.tracing_s`), against the main search's second trial at a batch, which reads it;
#   4. `tuner validate --backend jax --gpus 0` (one device: it refuses, and says why) and
#      `--accumulation 2` (k micro-steps against one step at k x the batch, on the GPU's numerics);
#   5. an `--lr-sweep 5` study at one precision over three batches, exported with its law;
# and write to $OUT (default ./gpu-out): study.db (every study), recommendation.json,
# sweep.json, validate.json, summary.md, log.txt. Every stage has its own time budget and a
# deadline over all of them: a stage cut short is interrupted (what finished is stored), and the
# summary is remade after each stage, so whatever finished comes back.
#
#   benchmarks/gpu/run.sh            the real check (one GPU; wheels in .whl/, see README.md)
#   benchmarks/gpu/run.sh --smoke    the same steps on CPU replicas with tiny specs (~3 min)
#
# Knobs (environment): TUNER_GPU_MEMORY_LIMIT (default 6GiB), TUNER_GPU_SEARCH_BUDGET_S (the main
# search; default 150), TUNER_GPU_DEADLINE_S (all stages; default 400), TUNER_GPU_TRIAL_TIMEOUT_S
# (default 150), TUNER_GPU_WHEELS (default .whl), PYTHON (default python3).
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
DEADLINE_S="${TUNER_GPU_DEADLINE_S:-400}"
STORAGE="sqlite:///$OUT/study.db"
if [ "$SMOKE" = 1 ]; then
    # CPU replicas; no single-device baseline (the GPU run has one device, so none either).
    SPEC=benchmarks/gpu/smoke.toml
    STUDY=convnet-smoke
    DEVICES=(--cpu-replicas 2 --no-baseline)
    ONE_DEVICE=(--cpu-replicas 1)
    CAP=()
    BUDGET_S="${TUNER_GPU_SEARCH_BUDGET_S:-150}"
    CACHE_BATCHES=4  # not the base batch, where sqrt is none
    # One batch: its three rates are a law (lr* there); the GPU run fits it over three. At base
    # rate 4e-3 the three (2e-3, 4e-3, 8e-3) bracket the best rate, so the sweep stops at them:
    # from 1e-3 its best was its largest and it trained two rates more above.
    SWEEP=(--base-batch-size 16 --batch-multipliers 1 --lr-sweep 3 --base-lr 4e-3)
else
    SPEC=benchmarks/gpu/spec.toml
    STUDY=convnet-gpu
    DEVICES=(--gpus 0)
    ONE_DEVICE=(--gpus 0)
    CAP=(--memory-limit "${TUNER_GPU_MEMORY_LIMIT:-6GiB}")
    BUDGET_S="${TUNER_GPU_SEARCH_BUDGET_S:-150}"
    CACHE_BATCHES=16  # global batch 1,024
    SWEEP=(--base-batch-size 256 --batch-multipliers 1,4,16 --lr-sweep 5)  # 256, 1,024, 4,096
fi

stage() { echo; echo "=== $(date -u +%H:%M:%S) (+$((SECONDS - STARTED))s) $*"; }
# Seconds a stage may take: its own budget, or what is left before the deadline.
allow() { local left=$((DEADLINE_S - (SECONDS - STARTED))); echo $(( $1 < left ? $1 : left )); }
# A search cut at its budget is interrupted (SIGINT: what finished is stored); of $SEARCH_SPEC,
# else $SPEC.
search() {
    local budget=$1; shift
    if [ "$budget" -lt 20 ]; then echo "skipped: ${budget}s left before the deadline"; return 124; fi
    timeout -s INT -k 30 "$budget" "$PY" -m tuner search --spec "${SEARCH_SPEC:-$SPEC}" \
        --backend jax --storage "$STORAGE" --trial-timeout "$TRIAL_TIMEOUT_S" "${CAP[@]}" "$@"
}
# $SPEC at one precision (`tuner search` reads the precisions from the spec only): its path, in
# a folder outside $OUT (whose files all travel back).
at_precision() {
    local spec="$SPECS/$1.toml"
    sed "s/^precisions = .*/precisions = [\"$1\"]/" "$SPEC" >"$spec" && echo "$spec"
}

summarise() {
    "$PY" benchmarks/gpu/summary.py --storage "$STORAGE" --study-name "$STUDY" \
        --recommendation "$OUT/recommendation.json" --output "$OUT/summary.md" \
        ${CAP[1]:+--memory-limit "${CAP[1]}"} --search-seconds "$SEARCH_S" \
        --search-exit "$SEARCH_RC" ${TESTS_RC:+--tests-exit "$TESTS_RC"} \
        --cache-off-study "$STUDY-cache-off" --sweep-study "$STUDY-sweep" \
        --sweep-recommendation "$OUT/sweep.json" --validate "$OUT/validate.json" \
        ${VALIDATE_ONE:+--validate-one-device "$VALIDATE_ONE"} \
        --total-seconds $((SECONDS - STARTED))
}

main() {
    STARTED=$SECONDS
    stage "tuner GPU check (smoke=$SMOKE) into $OUT, deadline ${DEADLINE_S}s"
    rm -f "$OUT"/study.db "$OUT"/*.json "$OUT/summary.md"

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
    # tuner keeps compiled programs beside a SQLite file; here that is $OUT, whose files all
    # travel back: the cache lives outside it.
    local cache=/tmp/tuner-gpu-xla-cache
    rm -rf "$cache"
    export TUNER_COMPILE_CACHE="$cache"
    SPECS=/tmp/tuner-gpu-specs
    rm -rf "$SPECS" && mkdir -p "$SPECS"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
    "$PY" - <<'PYEOF'
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
PYEOF

    stage "1. tuner search ($SPEC, interrupted after ${BUDGET_S}s)"
    local started_search=$SECONDS
    search "$(allow "$BUDGET_S")" --study-name "$STUDY" "${DEVICES[@]}"
    SEARCH_RC=$? SEARCH_S=$((SECONDS - started_search))
    echo "search exit code: $SEARCH_RC after ${SEARCH_S}s"
    "$PY" -m tuner export --storage "$STORAGE" --study-name "$STUDY" \
        --output "$OUT/recommendation.json"
    echo "export exit code: $?"
    summarise

    stage "2. pytest -m gpu tests/gpu"
    timeout -k 10 "$(allow 90)" "$PY" -m pytest -m gpu tests/gpu -q -rs -p no:cacheprovider \
        -n 0 --timeout 80
    TESTS_RC=$?
    echo "gpu tests exit code: $TESTS_RC"

    stage "3. the same program compiled twice with the compile cache off"
    TUNER_COMPILE_CACHE=0 SEARCH_SPEC=$(at_precision float32) search "$(allow 60)" \
        --study-name "$STUDY-cache-off" "${DEVICES[@]}" --batch-multipliers "$CACHE_BATCHES" \
        --lr-rules none,sqrt --no-baseline --no-noise-scale --seeds 1 --max-repeats 1
    echo "cache-off search exit code: $?"

    stage "4. tuner validate on one device, then --accumulation 2"
    VALIDATE_ONE=$(timeout -k 10 "$(allow 30)" "$PY" -m tuner validate --backend jax \
        "${ONE_DEVICE[@]}" 2>&1 | tail -1)
    echo "one device: $VALIDATE_ONE"
    timeout -k 10 "$(allow 60)" "$PY" -m tuner validate --backend jax "${ONE_DEVICE[@]}" \
        --accumulation 2 --output "$OUT/validate.json"
    echo "validate --accumulation 2 exit code: $?"

    stage "5. ${SWEEP[*]} at mixed_bfloat16"
    local precision=mixed_bfloat16
    [ "$SMOKE" = 1 ] && precision=float32
    SEARCH_SPEC=$(at_precision "$precision") search "$(allow 120)" --study-name "$STUDY-sweep" \
        "${DEVICES[@]}" "${SWEEP[@]}" --lr-rules none --no-baseline --seeds 1 --max-repeats 1
    echo "sweep search exit code: $?"
    "$PY" -m tuner export --storage "$STORAGE" --study-name "$STUDY-sweep" \
        --output "$OUT/sweep.json"
    echo "sweep export exit code: $?"

    stage "summary"
    summarise || return 1
    cat "$OUT/summary.md"
    stage "done in $((SECONDS - STARTED))s: $OUT"
    [ "$SEARCH_RC" = 0 ] && [ "$TESTS_RC" = 0 ]
}

main 2>&1 | tee "$OUT/log.txt"
