#!/usr/bin/env bash
# Runs headscan on a Slurm cluster: the corpus is cut into N shards analysed by a job array
# (shard.sbatch), then one job merges them into the report (merge.sbatch), the same report as
# `headscan MODEL CORPUS -o OUT/report` run on one machine.
#
#   scripts/slurm/submit.sh --shards N [--gpus-per-shard G] [--headscan PATH] [--wait]
#       [--threshold NAME=VALUE]... [--no-html] [--no-plots] MODEL CORPUS OUT [-- HEADSCAN OPTION...]
#
# OUT/shards/I  the state of shard I (0 to N-1)
# OUT/report    the report: heads.json, index.html, plots
# OUT/logs      the jobs' output: shard-ARRAYJOB_I.out, merge-JOB.out
# Options after -- go to every shard's analysis (e.g. --parser none --max-length 256); --threshold,
# --no-html and --no-plots go to the merge. --headscan is the binary the jobs run (default: the
# headscan on PATH). MODEL, CORPUS, OUT and that binary must be on a file system every node sees.
# With --wait the script returns when the merge has ended: 0 if the report was written, 1 if a
# shard or the merge failed (a failed shard cancels the merge: --kill-on-invalid-dep).
# Without it, it returns once both jobs are queued.
# --gpus-per-shard G: each shard's task gets G GPUs (sbatch --gpus-per-task=G) and runs headscan with
# --device cuda unless the options after -- name a --device. One headscan process computes on one
# GPU (the first of its task's, cuda:0 as Slurm numbers them): more shards, not more GPUs per shard,
# use more GPUs; G > 1 only reserves the others. The merge needs no GPU.
#
# HEADSCAN_SBATCH_OPTIONS: more sbatch options for both jobs, split at spaces, e.g.
#   HEADSCAN_SBATCH_OPTIONS="--partition=cpu --time=02:00:00 --mem=16G --cpus-per-task=4"
# (sbatch's own SBATCH_* variables, e.g. SBATCH_PARTITION, work too).
# Exit codes: 0 ok, 2 bad usage, 1 the submission or (with --wait) a job failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<'EOF'
usage: scripts/slurm/submit.sh --shards N [--gpus-per-shard G] [--headscan PATH] [--wait]
           [--threshold NAME=VALUE]... [--no-html] [--no-plots] MODEL CORPUS OUT [-- HEADSCAN OPTION...]
EOF
}
bad_usage() {
  echo "submit.sh: $1" >&2
  usage >&2
  exit 2
}

shards="" headscan="" wait=0 gpus=0
merge_options=() positional=() extra=()
while (($#)); do
  case $1 in
    --shards | --headscan | --threshold | --gpus-per-shard)
      (($# >= 2)) || bad_usage "$1 needs a value"
      case $1 in
        --shards) shards=$2 ;;
        --gpus-per-shard) gpus=$2 ;;
        --headscan) headscan=$2 ;;
        --threshold) merge_options+=(--threshold "$2") ;;
      esac
      shift 2 ;;
    --shards=*) shards=${1#*=}; shift ;;
    --gpus-per-shard=*) gpus=${1#*=}; shift ;;
    --headscan=*) headscan=${1#*=}; shift ;;
    --threshold=*) merge_options+=("$1"); shift ;;
    --no-html | --no-plots) merge_options+=("$1"); shift ;;
    --wait) wait=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -?*) bad_usage "unknown option $1 (options for headscan go after --)" ;;
    *) positional+=("$1"); shift ;;
  esac
done

((${#positional[@]} == 3)) || bad_usage "expected MODEL CORPUS OUT, got ${#positional[@]} arguments"
[[ $shards =~ ^[1-9][0-9]*$ ]] || bad_usage "--shards N: N must be a whole number from 1 (got '${shards}')"
[[ $gpus =~ ^[0-9]+$ ]] || bad_usage "--gpus-per-shard G: G must be a whole number (got '${gpus}')"
shard_options=()
if ((10#$gpus > 0)); then
  shard_options=(--ntasks=1 "--gpus-per-task=$gpus")
  device_given=0
  for option in "${extra[@]}"; do
    [[ $option == --device || $option == --device=* ]] && device_given=1
  done
  ((device_given)) || extra+=(--device cuda)
fi
model=${positional[0]} corpus=${positional[1]} out=${positional[2]}
[[ $corpus != - ]] || bad_usage "a corpus on standard input cannot be shared by the jobs: give a file"
[[ -r $model ]] || bad_usage "cannot read the model $model"
[[ -r $corpus ]] || bad_usage "cannot read the corpus $corpus"
if [[ -z $headscan ]]; then
  headscan=$(command -v headscan) || bad_usage "no headscan on PATH: give the binary with --headscan PATH"
fi
[[ -f $headscan && -x $headscan ]] || bad_usage "--headscan $headscan: not an executable file"
command -v sbatch >/dev/null || { echo "submit.sh: sbatch not found: run this on a Slurm submit host" >&2; exit 1; }

# The jobs may start in another directory: every path they get is absolute.
model=$(realpath "$model")
corpus=$(realpath "$corpus")
headscan=$(realpath "$headscan")
mkdir -p "$out/logs"
out=$(realpath "$out")

read -r -a sbatch_options <<<"${HEADSCAN_SBATCH_OPTIONS:-}"

if ! array_job=$(sbatch --parsable --array="0-$((shards - 1))" --job-name=headscan-shard \
  --output="$out/logs/shard-%A_%a.out" "${shard_options[@]}" "${sbatch_options[@]}" \
  "$here/shard.sbatch" "$headscan" "$model" "$corpus" "$out" "$shards" "${extra[@]}"); then
  echo "submit.sh: sbatch could not submit the shards' array job" >&2
  exit 1
fi
array_job=${array_job%%;*}  # --parsable prints JOBID or JOBID;CLUSTER

merge_command=(sbatch --parsable --dependency="afterok:$array_job" --kill-on-invalid-dep=yes
  --job-name=headscan-merge --output="$out/logs/merge-%j.out" "${sbatch_options[@]}")
((wait)) && merge_command+=(--wait)
merge_command+=("$here/merge.sbatch" "$headscan" "$out" "$shards" "${merge_options[@]}")

# sbatch --wait prints the job id at once and exits when the job has ended: run it in the
# background so the id can be shown while waiting. A background command ignores Ctrl-C, so the
# exit stops it if it still runs (sbatch_pid is cleared once it has been waited for).
id_file=$(mktemp)
sbatch_pid=""
trap 'rm -f "$id_file"; if [[ -n $sbatch_pid ]]; then kill "$sbatch_pid" 2>/dev/null || true; fi' EXIT
"${merge_command[@]}" >"$id_file" &
sbatch_pid=$!
while [[ ! -s $id_file ]] && kill -0 "$sbatch_pid" 2>/dev/null; do sleep 0.2; done
merge_job=$(head -n 1 "$id_file")
merge_job=${merge_job%%;*}
if [[ -z $merge_job ]]; then
  wait "$sbatch_pid" || true
  sbatch_pid=""
  echo "submit.sh: sbatch could not submit the merge job; cancelling the shards' array job $array_job" >&2
  scancel "$array_job" || true
  exit 1
fi

echo "shards: array job $array_job ($shards tasks), logs $out/logs/shard-${array_job}_*.out"
echo "merge:  job $merge_job, after every shard succeeded, log $out/logs/merge-$merge_job.out"
echo "report: $out/report"
if ((!wait)); then
  wait "$sbatch_pid" || true
  sbatch_pid=""
  exit 0
fi

echo "waiting for the merge job $merge_job (Ctrl-C stops the waiting, not the jobs: scancel $array_job $merge_job)"
status=0
wait "$sbatch_pid" || status=$?
sbatch_pid=""
# sbatch --wait gives the job's exit code, and 0 for a job cancelled before it ran (a shard
# failed): the job's state tells them apart while slurmctld still has the job (MinJobAge), and
# after that whether the job ever started and so created its log.
state=$(scontrol show job -o "$merge_job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') || true
if ((status == 0)) && { [[ $state == COMPLETED || $state == COMPLETING ]] ||
  [[ -z $state && -e $out/logs/merge-$merge_job.out ]]; }; then
  echo "done: $out/report"
  exit 0
fi
echo "submit.sh: the merge job $merge_job did not succeed (state ${state:-unknown}, exit code $status)" >&2
[[ $state == CANCELLED ]] && echo "submit.sh: it was cancelled, most likely because a shard failed" >&2
scontrol show job -o "$array_job" 2>/dev/null |
  sed -n 's/.* ArrayTaskId=\([0-9]*\) .* JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\).*/  shard \1: \2, exit code \3/p' >&2 || true
echo "submit.sh: see the logs in $out/logs" >&2
exit 1
