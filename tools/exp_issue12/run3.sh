#!/usr/bin/env bash
# Call 3: carried extension (byte kernel): suite + sanitizers, histogram auto rule, target table, call costs.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
PREBUILT=1 SKIP_ACCURACY=1 PYTEST_TIMEOUT=240 bash tools/device_check.sh 2>&1 | tail -15
export PYTHONPATH=$PWD
timeout 90 python3 -m cuatomic bench auto --ops histogram --update cuatomic/rules/cuda.json > $OUT/auto.txt 2>&1; echo "auto rc $?"
cp cuatomic/rules/cuda.json $OUT/rules_cuda.json
mkdir -p $OUT/targets
timeout 230 python3 -m cuatomic bench --targets --out $OUT/targets > $OUT/targets/targets.txt 2>&1; echo "targets rc $?"
tail -3 $OUT/targets/targets.txt
timeout 60 python3 .devdata/exp/ab.py new --calls > $OUT/calls.txt 2>&1; echo "calls rc $?"
grep -E 'calls:|new ' $OUT/calls.txt
