# Helpers for the CLI tests (sourced). Every test script is called as
#   bash <script> <path to oracle binary> <default shared dir> [case]
# and exits 0 on success, 1 with a message on failure.
set -euo pipefail
ORACLE=$1
SHARED=${ORACLE_SHARED_DIR:-$2}
MODELS="$SHARED/models"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

need_fixture() {  # a missing fixture is a failure, never a skip
  [ -e "$1" ] || fail "missing fixture $1 (set ORACLE_SHARED_DIR to the shared folder)"
}

# run_capture: runs the command, leaving stdout/stderr in $WORK/out, $WORK/err and
# the exit status in $RC.
run_capture() {
  set +e
  "$@" >"$WORK/out" 2>"$WORK/err"
  RC=$?
  set -e
}

# expect_input_error FILE FIELD -- command...: exit code 2 (not a signal), exactly one
# line on stderr, naming FILE and FIELD.
expect_input_error() {
  local file=$1 field=$2
  shift 3
  run_capture "$@"
  local lines
  lines=$(wc -l <"$WORK/err")
  [ "$RC" -eq 2 ] || fail "exit code $RC (want 2) for: $*; stderr: $(cat "$WORK/err")"
  [ "$lines" -eq 1 ] || fail "want one stderr line, got $lines: $(cat "$WORK/err")"
  grep -qF -- "$file" "$WORK/err" || fail "error line does not name the file '$file': $(cat "$WORK/err")"
  grep -qiE -- "$field" "$WORK/err" || fail "error line does not name the field '$field': $(cat "$WORK/err")"
  echo "ok: $(cat "$WORK/err")"
}

# patch_bytes FILE OFFSET HEXBYTES: overwrite bytes in place ("40420f00" -> 4 bytes).
patch_bytes() {
  local file=$1 offset=$2 hex=$3 esc=""
  for ((i = 0; i < ${#hex}; i += 2)); do esc+="\\x${hex:i:2}"; done
  printf "$esc" | dd of="$file" bs=1 seek="$offset" conv=notrunc status=none
}
