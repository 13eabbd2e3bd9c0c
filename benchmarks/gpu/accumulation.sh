#!/usr/bin/env bash
# The accumulation proof (`tuner validate --accumulation 2`) on a GPU's numerics, as the tree
# runs it (full float32: TensorFloat-32 off in both children) and as before (the framework's
# default matmul precision), on the built-in regression model under Adam and under SGD.
# About a minute on one GPU; writes one JSON report per run to $OUT (default /tmp/acc-out).
#
#   benchmarks/gpu/accumulation.sh                       one GPU, wheels in .whl/ (README.md)
#   DEV="--cpu-replicas 1" benchmarks/gpu/accumulation.sh     the same on a CPU
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/acc-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/tuner-gpu-site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/tuner-gpu-site
fi
read -r -a DEV <<<"${DEV:---gpus 0}"
# "default": a copy of the tree whose children keep the framework's own matmul precision.
OLD=/tmp/tuner-default-precision
rm -rf "$OLD" && mkdir "$OLD" && cp -r tuner "$OLD/"
sed -i 's/{\*\*plan.child_environment(), \*\*FULL_FLOAT32}/plan.child_environment()/' \
    "$OLD/tuner/driver/validate_accumulation.py"
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 TUNER_COMPILE_CACHE=0
for spec in studies/regression.toml benchmarks/gpu/sgd.toml; do
    for tree in "$OLD" "$PWD"; do
        name=$(basename "$spec" .toml)-$([ "$tree" = "$PWD" ] && echo full || echo default)
        PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" timeout 90 "$PY" -m tuner validate \
            --spec "$spec" --backend jax "${DEV[@]}" --accumulation 2 --steps "${STEPS:-20}" \
            -o "$OUT/$name.json" >/dev/null 2>&1
        "$PY" - "$OUT/$name.json" "$name" <<'PYEOF'
import json, sys
try:
    check = json.load(open(sys.argv[1]))["checks"]["accumulated_weights"]
    print(f"{sys.argv[2]}: {check['summary']}")
except (OSError, ValueError, KeyError) as exc:
    print(f"{sys.argv[2]}: no report ({exc})")
PYEOF
    done
done
