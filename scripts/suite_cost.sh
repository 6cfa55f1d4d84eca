#!/usr/bin/env bash
# CPU and wall seconds of one device-parameterised test binary as CI runs it:
# once on cpu, its sim instances under the forward, reverse and random
# schedules, and once more under the sim checks (tests/CMakeLists.txt). CPU
# seconds (user + sys) are what a loaded machine distorts least.
#   scripts/suite_cost.sh BINARY [LATER_SCHEDULES_FILTER] [SIMCHECK_FILTER]
# The filters default to */sim*, as convkit_add_sim_runs and
# convkit_add_sim_check_run pass them.
set -euo pipefail
bin=$1
later=${2:-"*/sim*"}
check=${3:-"*/sim*"}
run() {  # label, then env and command
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S" -o /tmp/suite_cost.$$ env OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive "$@" >/dev/null 2>&1 ||
    { echo "$label failed" >&2; exit 1; }
  read -r wall user sys </tmp/suite_cost.$$
  printf '%-22s wall %6.2f  cpu %6.2f\n' "$label" "$wall" "$(python3 -c "print($user + $sys)")"
}
run cpu "$bin"
run sim.forward CONVKIT_TEST_SIM=1 CONVKIT_SIM_SCHEDULE=forward "$bin" "--gtest_filter=*/sim*"
run sim.reverse CONVKIT_TEST_SIM=1 CONVKIT_SIM_SCHEDULE=reverse "$bin" "--gtest_filter=$later"
run sim.random CONVKIT_TEST_SIM=1 CONVKIT_SIM_SCHEDULE=random:20261126 "$bin" "--gtest_filter=$later"
run simcheck CONVKIT_TEST_SIM=1 CONVKIT_SIM_CHECK=memcheck,racecheck,initcheck OMP_NUM_THREADS=1 "$bin" "--gtest_filter=$check"
echo "ctest entries on cpu: $("$bin" --gtest_list_tests | grep -c '^  ')"
rm -f /tmp/suite_cost.$$
