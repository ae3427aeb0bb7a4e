#!/usr/bin/env bash
# The real-GPU checks, for a CUDA machine (the course's GPU runner, or a lent one):
#
#     OUT=out/gpu-check [WHEELS=folder-of-wheels] bash scripts/gpu_check.sh
#
# WHEELS: a folder of wheels for a machine without network (pdfplumber, pytest-json-report and
# their dependencies, e.g. Pillow): installed first into the interpreter that runs the grader
# (`python3 -m pip`: a bare `pip` may belong to another Python).
#
# BATCH_WORKERS="1 4 8" (default; empty skips it) and BATCH_COUNT=32: `pdl-grade batch` of
# practical4 submissions on this node's cores with CUDA hidden, once per worker count
# (benchmarks/batch_throughput.py: throughput, cores busy, CPU-seconds per submission; with
# 16, 8 workers get two submissions each and the batch's own start and end weigh too much).
#
# 0. the C hot path built in place, the sandbox probed; 1. the batch on the node's cores;
# 2. each reference script on the real GPUs it needs (virtual ones make up the rest), with
#    its trace; 3. the grade of the reference (no integrity hold: real-GPU traces are sealed
#    too); 4. `pytest grader/ --submission reference` (what a student runs); 5. the
#    virtual-GPU and seal tests beside a real GPU. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-out/gpu-check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
step() { echo; echo "=== $* ($(date +%T))"; }

if [ -n "${WHEELS:-}" ]; then
    step "dependencies from $WHEELS"
    python3 -m pip install -q --no-index --find-links "$WHEELS" pdfplumber pytest-json-report \
        2>&1 | grep -v "^WARNING: Running pip as" | tail -3
fi
python3 -c "import pytest_jsonreport, pdfplumber" 2>/dev/null \
    || echo "WARNING: pytest-json-report or pdfplumber missing: 'pdl-grade grade' cannot score"

step machine
nvidia-smi -L
python3 - <<'PY'
import sys, torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "gpus", torch.cuda.device_count(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PY
# What one `import torch` costs here, and whether torch's bytecode is cached: every sandboxed
# run pays the import, and without .pyc files Python compiles torch each time, unless the
# grader compiles it once into its own cache (grader/common/bytecode.py; a few seconds, once).
python3 -c "from grader.common.bytecode import torch_bytecode_warning as w; print(w() or 'torch bytecode: cached')"
CUDA_VISIBLE_DEVICES= python3 -c "from grader.common.bytecode import shared_bytecode as s
print('bytecode the sandboxed runs read:', s() or 'the installation\'s own')"
for i in 1 2; do
    CUDA_VISIBLE_DEVICES= /usr/bin/time -f "import torch, CUDA hidden: %U s user, %S s system" \
        python3 -c "import torch"
done

step "the C hot path (built in place: this checkout is used without pip install) and the sandbox"
python3 setup.py -q build_ext --inplace >"$OUT/build_ext.log" 2>&1 || echo "build_ext failed (rc=$?)"
tail -3 "$OUT/build_ext.log"
python3 - <<'PY'
from grader.vgpu.c_path import c_module
from grader.sandbox import sandbox_available
from grader.common.cpu_share import machine_cpus, default_workers
print("C hot path:", c_module() or "not built (the Python path runs)")
print("sandbox:", sandbox_available())
print("cores:", machine_cpus(), "default --workers:", default_workers())
PY

BATCH_WORKERS=${BATCH_WORKERS-1 4 8}
if [ -n "$BATCH_WORKERS" ]; then
    step "pdl-grade batch on this node's cores, CUDA hidden (workers: $BATCH_WORKERS)"
    t0=$SECONDS
    # shellcheck disable=SC2086  # the worker counts are separate arguments
    CUDA_VISIBLE_DEVICES= timeout 420 python3 benchmarks/batch_throughput.py \
        --count "${BATCH_COUNT:-32}" --workers $BATCH_WORKERS 2>&1 | tee "$OUT/batch.log"
    echo "rc=${PIPESTATUS[0]} $((SECONDS - t0))s"
fi

step "reference scripts on the real GPU(s)"
run() { local name=$1; shift; local t0=$SECONDS
  python3 -m grader "$@" >"$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc=$rc $((SECONDS - t0))s"; tail -4 "$OUT/$name.log"; }
run p5_single run --gpus 1 --trace "$OUT/p5_single.jsonl" reference/practical5/practical5_single.py
run hw3_1gpu run --gpus 1 --trace "$OUT/hw3_1gpu.jsonl" --set DEPTH=8 reference/hw3/model_parallel.py
run p6_1rank torchrun --gpus 1 --nproc-per-node 1 --trace "$OUT/p6_1rank.jsonl" \
    reference/practical6/practical6_ddp.py
python3 - "$OUT" <<'PY'
import json, sys, collections
for name in ("p5_single", "hw3_1gpu", "p6_1rank"):
    try:
        events = [json.loads(l) for l in open(f"{sys.argv[1]}/{name}.jsonl") if l.strip()]
    except OSError as e:
        print(name, "no trace:", e); continue
    kinds = collections.Counter(e["event"] for e in events)
    start = next((e for e in events if e["event"] == "start"), {})
    exit_ = next((e for e in events if e["event"] == "exit"), {})
    print(name, dict(kinds), "| start:", {k: start.get(k) for k in ("virtual", "gpus", "real")},
          "| exit memory:", str(exit_.get("memory"))[:300])
PY

step "pdl-grade grade reference"
t0=$SECONDS
python3 -m grader grade reference --out "$OUT/grade" >"$OUT/grade.log" 2>&1
echo "rc=$? $((SECONDS - t0))s"; tail -12 "$OUT/grade.log"
python3 - "$OUT/grade/result.json" <<'PY'
import json, sys
for assignment in json.load(open(sys.argv[1]))["assignments"]:
    print(assignment["id"], assignment["score"], "/", assignment["max_score"],
          "integrity:", assignment.get("integrity"))
    for item in assignment["items"]:
        if item["status"] not in ("passed", "manual"):
            print(f"{item['id']}: {item['status']} {item['score']}/{item['max_score']}:",
                  " | ".join(item["feedback"].splitlines()[:4])[:600])
PY

step "pytest grader/ --submission reference"
t0=$SECONDS  # the plugin named, as from a checkout that was never pip-installed
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python3 -m pytest -p grader.pytest_plugin grader/checks --submission reference -q -rs \
    -p no:cacheprovider >"$OUT/pytest_grader.log" 2>&1
echo "rc=$? $((SECONDS - t0))s"; tail -25 "$OUT/pytest_grader.log"

step "tests/vgpu beside a real GPU"
t0=$SECONDS
timeout 200 python3 -m pytest tests/vgpu -q -x -p no:cacheprovider >"$OUT/tests_vgpu.log" 2>&1
echo "rc=$? $((SECONDS - t0))s"; tail -15 "$OUT/tests_vgpu.log"

step "tests/integrity beside a real GPU"
t0=$SECONDS
timeout 90 python3 -m pytest tests/integrity -q -x -p no:cacheprovider >"$OUT/tests_integrity.log" 2>&1
echo "rc=$? $((SECONDS - t0))s"; tail -8 "$OUT/tests_integrity.log"
