# Sourced by scripts/test.sh and .ci/run: `stage NAME COMMAND...` runs a command and records its wall
# time; the times are printed when the script exits, also when a stage fails (which ends the script
# with that stage's status).
stage_times=()
print_stage_times() {
  local status=$?
  echo "== $stage_title: wall time of each stage =="
  printf '  %s\n' "${stage_times[@]}"
  printf '  %-30s %5d s  (exit %d)\n' total "$SECONDS" "$status"
}
trap print_stage_times EXIT
stage() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "== $stage_title: $name ==" >&2
  "$@" || status=$?
  stage_times+=("$(printf '%-30s %5d s%s' "$name" $((SECONDS - start)) "$( ((status)) && echo "  FAILED (exit $status)")")")
  ((status == 0)) || exit "$status"
}
