# Sourced by the benchmarks' run scripts (bench/run_overhead.sh, bench/peers/run.sh): waiting for an
# idle machine before each measured run. The caller sets wait_idle (seconds, 0 = do not wait).

# Share of all CPUs busy over one second, in percent (from /proc/stat).
cpu_busy() {
  local a b
  read -r -a a </proc/stat; sleep 1; read -r -a b </proc/stat
  local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) )) total=0 i
  for ((i = 1; i < ${#a[@]}; ++i)); do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}

# Waits up to $wait_idle seconds for the machine to be idle (under 10 % busy); prints the busy
# share it saw last.
settle() {
  local waited=0 busy
  busy="$(cpu_busy)"
  while (( busy >= 10 && waited < wait_idle )); do
    sleep 4; waited=$(( waited + 5 )); busy="$(cpu_busy)"
  done
  echo "$busy"
}
