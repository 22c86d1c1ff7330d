#!/usr/bin/env bash
# Call 4: carried extension (publish kernel, stream-wait skip): suite + sanitizers, auto rules, call costs, dask-cuda one worker.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
( python3 -m pip install --no-index --find-links .devdata/wheels dask-cuda > $OUT/pip.txt 2>&1; echo "pip rc $?" ) &
PREBUILT=1 SKIP_ACCURACY=1 PYTEST_TIMEOUT=240 bash tools/device_check.sh 2>&1 | tail -12
wait
export PYTHONPATH=$PWD
timeout 90 python3 -m cuatomic bench auto --ops histogram --update cuatomic/rules/cuda.json --out $OUT/rules_cuda.json > $OUT/auto.txt 2>&1; echo "auto rc $?"
timeout 60 python3 .devdata/exp/ab.py new --calls > $OUT/calls.txt 2>&1; echo "calls rc $?"
grep -E 'calls:|new ' $OUT/calls.txt
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
timeout 240 python3 tools/bench_dask_gpu.py --gib 64 --chunk-mib 1024 --workers 1 --out $OUT/dask_gpu_1.json > $OUT/dask_gpu.txt 2>&1; echo "dask rc $?"
tail -5 $OUT/dask_gpu.txt
