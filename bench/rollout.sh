#!/bin/sh
# docs/benchmarks.md, figure 11: the rollout of a flex service of 3
# instances with the update_* defaults (1 at a time, update_monitor 5s),
# 3 daemons on loopback, from the request to `rollout --wait`'s answer,
# RUNS times (3 by default), through the e2e harness (TestRolloutFigure:
# its daemons, free ports and clean-up). Run from the module root:
#
#   bench/rollout.sh [RUNS]
#
# The lines starting with RESULT are the summary.
set -eu
cd "$(dirname "$0")/.."
HAVEN_BENCH_ROLLOUT=${1:-3} go test -count=1 -run 'TestRolloutFigure$' -v ./test/e2e | grep -E 'rollout [0-9]+ of|RESULT|FAIL|ok'
