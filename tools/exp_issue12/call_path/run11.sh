#!/usr/bin/env bash
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
timeout 150 python3 .devdata/exp/prof.py > $OUT/prof.txt 2>&1; echo "prof rc $?"; head -16 $OUT/prof.txt
PREBUILT=1 SKIP_ACCURACY=1 PYTEST_TIMEOUT=240 RUN_TARGETS=${RUN_TARGETS:-1} TARGETS_TIMEOUT=240 bash tools/device_check.sh 2>&1 | tail -14
