#!/bin/sh
# Nothing lost on a full disk (README, "The output directory"): on a small tmpfs filled to the
# last byte, a run over an earlier report, `headscan idf --force`, a shard over an earlier shard,
# `headscan merge --force` and `headscan compare --force` exit 1 naming the file that could not be
# written, and leave the earlier report, file, shard or comparison byte for byte, with no staging
# directory or lock beside it. An empty mount point given as -o (a container's volume) gets the
# report in it, --force replaces it there, and a full one keeps its earlier report. Mounting needs
# root (and the right to mount): otherwise the test is skipped, saying so (exit 77).
#   tests/full_disk.sh WORK_DIR HEADSCAN FIXTURE_DIR
set -eu
work=$1 headscan=$2 fixtures=$3
model=$fixtures/rare_word.pt corpus=$fixtures/rare_word_corpus.txt
options="--parser none --no-html --no-plots -q"

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: mounting a small tmpfs needs root (run as root to check full disks)"
  exit 77
fi
disk=$work/disk volume=$work/volume
for mounted in "$disk" "$volume"; do
  if mountpoint -q "$mounted" 2>/dev/null; then umount "$mounted"; fi
done
rm -rf "$work"
mkdir -p "$disk" "$volume" "$work/runs"
if ! mount -t tmpfs -o size=384k tmpfs "$disk" 2>"$work/mount.err"; then
  echo "SKIP: cannot mount a tmpfs here: $(cat "$work/mount.err")"
  exit 77
fi
trap 'umount "$disk" 2>/dev/null || true; umount "$volume" 2>/dev/null || true' EXIT
mount -t tmpfs -o size=384k tmpfs "$volume"

fail() { echo "FAIL: $*"; exit 1; }

# Fills the file system of directory $1 to its last byte.
fill() { dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true; }

# Shrinks the tmpfs mounted on $1 to what it holds: full, with no file added.
shrink() { mount -o "remount,size=$(df --output=used -k "$1" | tail -1 | tr -d " ")k" "$1"; }

# Runs headscan with the arguments after the first and checks that it exits $1 (stderr kept in
# $work/err).
expect() {
  code=$1
  shift
  set +e
  "$headscan" "$@" 2>"$work/err" >/dev/null
  got=$?
  set -e
  [ "$got" = "$code" ] || { cat "$work/err"; fail "headscan $* exited $got, expected $code"; }
}

# The error names the file that could not be written: under $1, with the disk's reason.
names_file() {
  grep -q "$1/[A-Za-z0-9_./-]*: cannot write (No space left on device)" "$work/err" ||
    { cat "$work/err"; fail "the message does not name a file under $1 with the reason"; }
}

# Only the expected entries (names sorted, space-separated) in directory $1.
only() {
  found=$(ls -A "$1" | sort | tr '\n' ' ' | sed 's/ $//')
  [ "$found" = "$2" ] || fail "$1 holds \"$found\", expected \"$2\""
}

# shellcheck disable=SC2086
"$headscan" "$model" "$corpus" -o "$work/runs/a" --max-sequences 2 $options
# shellcheck disable=SC2086
"$headscan" "$model" "$corpus" -o "$work/runs/b" --max-sequences 4 $options

# Earlier outputs on the small disk, and copies of them beside it.
cp -r "$work/runs/a" "$disk/report"
cp "$work/runs/a/idf.txt" "$disk/idf.txt"
# shellcheck disable=SC2086
"$headscan" "$model" "$corpus" --shard 0/2 -o "$disk/shard" $options
# shellcheck disable=SC2086
"$headscan" "$model" "$corpus" --shard 1/2 -o "$work/runs/shard1" $options
"$headscan" merge "$disk/shard" "$work/runs/shard1" -o "$disk/merged" --no-html --no-plots -q
"$headscan" compare "$work/runs/a" "$work/runs/b" --steps 0,1 -o "$disk/compare" --no-html --no-plots -q
mkdir "$work/before"
cp -r "$disk/report" "$disk/idf.txt" "$disk/shard" "$disk/merged" "$disk/compare" "$work/before/"
fill "$disk"

# shellcheck disable=SC2086
expect 1 "$model" "$corpus" -o "$disk/report" --force $options
names_file "$disk/report"
grep -q "$disk/report is as it was" "$work/err" || fail "the message does not say the report is as it was"
diff -r "$work/before/report" "$disk/report" || fail "the earlier report changed"

expect 1 idf "$model" "$corpus" -o "$disk/idf.txt" --force -q
grep -q "$disk/idf.txt: cannot write (No space left on device)" "$work/err" ||
  { cat "$work/err"; fail "the idf message does not name $disk/idf.txt"; }
cmp "$work/before/idf.txt" "$disk/idf.txt" || fail "the earlier idf file changed"

# shellcheck disable=SC2086
expect 1 "$model" "$corpus" --shard 0/2 -o "$disk/shard" --force $options
names_file "$disk/shard"
diff -r "$work/before/shard" "$disk/shard" || fail "the earlier shard changed"

expect 1 merge "$work/before/shard" "$work/runs/shard1" -o "$disk/merged" --force --no-html --no-plots -q
names_file "$disk/merged"
diff -r "$work/before/merged" "$disk/merged" || fail "the earlier merged report changed"

expect 1 compare "$work/runs/a" "$work/runs/b" --steps 0,1 -o "$disk/compare" --force -q
names_file "$disk/compare"
diff -r "$work/before/compare" "$disk/compare" || fail "the earlier comparison changed"
only "$disk" "compare fill idf.txt merged report shard"

# An empty mount point as -o: the report is written into it, and replaced there with --force.
# shellcheck disable=SC2086
expect 0 "$model" "$corpus" -o "$volume" --max-sequences 2 $options
only "$volume" "heads.csv heads.json idf.txt kv_plan"
cmp "$work/runs/a/heads.csv" "$volume/heads.csv" || fail "the report in the mount point differs"
# shellcheck disable=SC2086
expect 2 "$model" "$corpus" -o "$volume" $options
grep -q "exists and is not empty" "$work/err" || { cat "$work/err"; fail "a report in the mount point was not kept"; }
# shellcheck disable=SC2086
expect 0 "$model" "$corpus" -o "$volume" --max-sequences 4 --force $options
only "$volume" "heads.csv heads.json idf.txt kv_plan"
cmp "$work/runs/b/heads.csv" "$volume/heads.csv" || fail "--force did not replace the report in the mount point"
mountpoint -q "$volume" || fail "the mount point was replaced"
cp -r "$volume" "$work/before/volume"
shrink "$volume"
# shellcheck disable=SC2086
expect 1 "$model" "$corpus" -o "$volume" --max-sequences 2 --force $options
names_file "$volume"
diff -r "$work/before/volume" "$volume" || fail "the earlier report in the full mount point changed"

echo "full disk: exit 1 naming the file, earlier outputs whole; a mount point as -o holds the report"
