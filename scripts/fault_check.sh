#!/usr/bin/env bash
# Fault injection (docs/testing.md "Faults"; the table is faults/fault.h).
#   scripts/fault_check.sh [FAULT...]      build once, clean control, then every fault (or the named ones)
#   scripts/fault_check.sh --build-only [TARGET...]   just the instrumented build (diff_fault.sh uses it)
# One instrumented build in $FAULT_ROOT/build (default build/fault/build):
# -DORACLE_FAULT_INJECTION=ON, Release, no -march=native, no CUDA, building
# only the catching tests listed in the table (+ fault_table, oracle). Then:
#   clean control: every catching test with ORACLE_FAULT unset must pass;
#   each fault:    its catching tests with ORACLE_FAULT=<name>. The fault is
#                  caught iff at least one of them FAILS AN ASSERTION: a nonzero
#                  exit with Catch2's "failed" summary (no signal, no fatal error). Reported as
#                  NOT caught: the test passed, crashed (signal), timed out, a
#                  fixture was missing, an exception escaped, or RapidCheck gave up.
# RapidCheck runs with a fixed seed and no shrinking here (RC_PARAMS), so the
# verdicts are reproducible and a caught fault stops at its first failing case.
# Exit 0 iff the control is green and every selected fault is caught.
# Environment: FAULT_ROOT, ORACLE_SHARED_DIR, FAULT_TIMEOUT (s per test run, default 600),
# FAULT_JOBS (build jobs, default nproc), FAULT_PAR (test runs at a time, default nproc),
# FAULT_RC_PARAMS (default "seed=20261130 noshrink=1").
set -uo pipefail
cd "$(dirname "$0")/.."
root=${FAULT_ROOT:-build/fault}
dir="$root/build"
mkdir -p "$root/logs"
root=$(realpath "$root") dir=$(realpath -m "$dir")
export ORACLE_SHARED_DIR=${ORACLE_SHARED_DIR:-$PWD/../shared}
timeout_s=${FAULT_TIMEOUT:-600}
export RC_PARAMS=${FAULT_RC_PARAMS:-"seed=20261130 noshrink=1"}
unset ORACLE_PROP_SCALE

launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$root/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

build() {  # targets...
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORACLE_NATIVE=OFF -DORACLE_ENABLE_CUDA=OFF \
      -DORACLE_FAULT_INJECTION=ON "${launcher[@]}" >"$root/logs/configure.log" 2>&1 ||
      { tail -20 "$root/logs/configure.log" >&2; echo "fault_check: configure failed" >&2; return 2; }
  fi
  cmake --build "$dir" -j "${FAULT_JOBS:-$(nproc)}" --target "$@" >"$root/logs/build.log" 2>&1 ||
    { tail -30 "$root/logs/build.log" >&2; echo "fault_check: build failed (a build error is not a catch)" >&2; return 2; }
  [ "$("$dir/bin/fault_table" --injection)" = 1 ] || { echo "fault_check: $dir is not an instrumented build" >&2; return 2; }
}

if [ "${1:-}" = --build-only ]; then
  shift
  build fault_table "$@"
  exit $?
fi

t0=$SECONDS
build fault_table || exit 2
"$dir/bin/fault_table" --tsv >"$root/table.tsv" || exit 2
# the selected faults' rows (all when none is named)
selected=" $* "
awk -F'\t' -v sel="$selected" 'sel == "  " || index(sel, " " $1 " ")' "$root/table.tsv" >"$root/selected.tsv"
exes=$(cut -f3 "$root/selected.tsv" | tr ' ' '\n' | cut -d: -f1 | sort -u | tr '\n' ' ')
# FAULT_EXTRA_TARGETS: more targets for the same ninja run (CI: oracle, which the
# diff_fault tests use next; one build keeps both cores busy to the end).
build fault_table $exes ${FAULT_EXTRA_TARGETS:-} || exit 2
echo "fault_check: instrumented build of $(echo $exes | wc -w) test executables: $((SECONDS - t0)) s"

# Runs one catching test ("exe" or "exe:filter"); prints its verdict:
# pass | caught | crash | timeout | fixture | exception | gave_up | error
run_one() {  # fault spec
  local fault=$1 spec=$2 exe=${2%%:*} filter="" log rc
  [ "$spec" != "$exe" ] && filter=${spec#*:}
  log="$root/logs/${fault}.${spec//[^A-Za-z0-9_.-]/_}.log"
  if [ "$fault" = NONE ]; then
    env -u ORACLE_FAULT timeout "$timeout_s" "$dir/bin/$exe" $filter >"$log" 2>&1; rc=$?
  else
    ORACLE_FAULT=$fault timeout "$timeout_s" "$dir/bin/$exe" $filter >"$log" 2>&1; rc=$?
  fi
  if [ $rc -eq 0 ]; then echo pass
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo timeout
  # Catch2's exit status is its failed-assertion count capped at 255, so a status >= 128
  # is a signal only when no Catch2 summary was printed.
  elif grep -q "fatal error condition" "$log" ||
       { [ $rc -ge 128 ] && ! grep -qE "^test cases:.*[0-9]+ failed" "$log"; }; then echo crash
  elif grep -qE "missing fixture|is missing \(tests need|\(set ORACLE_SHARED_DIR\)" "$log"; then echo fixture
  elif grep -qE "Exception thrown with message|due to unexpected exception" "$log"; then echo exception
  elif grep -q "Gave up after" "$log"; then echo gave_up
  elif grep -qE "(assertions|test cases):.*failed" "$log"; then echo caught
  else echo error
  fi
}

# Runs are independent processes: FAULT_PAR (default nproc) of them at a time; each
# writes its verdict to a file, and the report is printed in table order afterwards.
par=${FAULT_PAR:-$(nproc)}
verdicts="$root/verdicts"; rm -rf "$verdicts"; mkdir -p "$verdicts"
export -f run_one; export root dir timeout_s verdicts
run_all() {  # reads "fault spec" lines; one verdict file per line: <fault>.<spec>
  xargs -P "$par" -L 1 bash -c 's=$SECONDS; v=$(run_one "$0" "$1"); echo "$v $((SECONDS - s))" >"$verdicts/$0.${1//\//_}"'
}
verdict() { cat "$verdicts/$1.${2//\//_}" 2>/dev/null || echo "error 0"; }  # fault spec -> "verdict seconds"

fail=0
echo "== clean control (ORACLE_FAULT unset, $par at a time)"
specs=$(cut -f3 "$root/selected.tsv" | tr ' ' '\n' | sort -u)
for spec in $specs; do echo "NONE $spec"; done | run_all
for spec in $specs; do
  read -r v s <<<"$(verdict NONE "$spec")"
  printf '  %-40s %s (%d s)\n' "$spec" "$v" "$s"
  [ "$v" = pass ] || fail=1
done
[ $fail -eq 0 ] || { echo "fault_check: the clean control is not green; no fault verdict is meaningful" >&2; exit 1; }

echo "== faults ($par at a time)"
while IFS=$'\t' read -r name layer tests; do
  for spec in $tests; do echo "$name $spec"; done
done <"$root/selected.tsv" | run_all
printf '  %-34s %-34s %s\n' FAULT TEST VERDICT
n=0 caught=0
while IFS=$'\t' read -r name layer tests; do
  n=$((n + 1)) got=0
  for spec in $tests; do
    read -r v s <<<"$(verdict "$name" "$spec")"
    printf '  %-34s %-34s %s (%d s)\n' "$name" "$spec" "$v" "$s"
    [ "$v" = caught ] && got=1
  done
  if [ $got -eq 1 ]; then caught=$((caught + 1)); else fail=1; echo "  NOT CAUGHT: $name (logs in $root/logs)"; fi
done <"$root/selected.tsv"
echo "fault_check: $caught of $n faults caught by a failed assertion; clean control green; $((SECONDS - t0)) s"
exit $fail
