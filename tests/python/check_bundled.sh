#!/usr/bin/env bash
# The wheel runs on a machine that has none of the libraries it bundles (cairo, pango, glib, X11,
# link-grammar, libarchive, …) nor their data (link-grammar's dictionary, fonts). A root made here
# holds only what every Linux has (glibc, libstdc++, libgcc, zlib: a minimal Debian has them, its
# package manager needs them) and the venv the wheel was installed
# into (hard links, at its own path): in it, headscan analyses the demo with link-grammar, writes
# its HTML and plots, and gets the heads.json it gets outside; then, with the libraries the Python
# interpreter itself needs added, `import headscan` and scan() work there too. Runs in a private
# mount namespace (unshare) with /proc and /dev mounted, so nothing stays mounted; needs root.
# Usage: check_bundled.sh VENV WORK_DIR
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "check_bundled: skipped: chroot and mount need root"
  exit 0
fi
venv=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data="$here/../../data"
root="$work/root"
rm -rf "$root"
mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/tmp" "$root/proc" "$root/dev" "$root/data" "$root/out"
chmod 1777 "$root/tmp"

copy_library() {  # the file a soname resolves to on this machine, under its soname
  local path
  path=$(ldconfig -p | awk -v name="$1" '$1 == name && /x86-64/ && !found {print $NF; found = 1}')
  [[ -n $path ]] || { echo "check_bundled: $1 not found on this machine" >&2; exit 1; }
  cp -L "$path" "$root/lib/x86_64-linux-gnu/$1"
}
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
for soname in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libstdc++.so.6 libgcc_s.so.1 libz.so.1; do
  copy_library "$soname"
done

# The venv at its own path, by hard links (it holds torch: gigabytes); the interpreter it links to
# and its standard library, copied to theirs (only those: with Debian's python3 they are in /usr,
# whose other libraries must stay out).
mkdir -p "$root$(dirname "$venv")"
cp -al "$venv" "$root$venv"
interpreter=$(readlink -f "$("$venv/bin/python" -c 'import sys; print(sys._base_executable)')")
stdlib=$("$venv/bin/python" -c 'import os; print(os.path.dirname(os.__file__))')
dynload=$("$venv/bin/python" -c 'import os, _struct; print(os.path.dirname(_struct.__file__))')
for path in "$interpreter" "$stdlib" "$dynload"; do
  [[ -e "$root$path" ]] && continue
  mkdir -p "$root$(dirname "$path")"
  cp -a "$path" "$root$path"
done
cp "$data/demo.pt" "$root/data/"
{
  head -n 40 "$data/demo_corpus.txt"
  # English that link-grammar parses (the demo's lines are word salad).
  printf '%s\n' "The dog chased the cat." "A small bird sat on the old tree." "She gave him the book yesterday." \
    "The children played in the garden after school." "We saw the movie that you liked."
} > "$root/data/corpus.txt"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
binary="$site/headscan/bin/headscan"

in_root() {
  unshare --mount --fork sh -c 'mount -t proc proc "$0/proc" && mount --bind /dev "$0/dev" && exec chroot "$0" "$@"' \
    "$root" "$@"
}

# 1. The command line, with only glibc and the C++ runtime beside the venv.
in_root "$binary" /data/demo.pt /data/corpus.txt -o /out/report --parser link-grammar -q
for file in heads.json index.html plots/heads.png plots/layers.png; do
  [[ -s "$root/out/report/$file" ]] || { echo "check_bundled: the report lacks $file" >&2; exit 1; }
done
"$binary" "$root/data/demo.pt" "$root/data/corpus.txt" -o "$work/outside" --parser link-grammar -q --force
"$venv/bin/python" - "$root/out/report/heads.json" "$work/outside/heads.json" <<'PY'
import json, sys
inside, outside = (json.load(open(path)) for path in sys.argv[1:])
for document in (inside, outside):
    document.pop("run")
    document["model"].pop("path"), document["corpus"].pop("path")
    document["model"]["tokenizer"] = document["model"]["tokenizer"].split(" (")[0]
assert inside == outside, "heads.json differs inside the bare root"
assert inside["corpus"]["parsed_sentences"] > 0, "link-grammar parsed nothing inside the bare root"
print(f"check_bundled: the command line ran in a root with glibc, libstdc++ and zlib only; "
      f"{inside['corpus']['parsed_sentences']} sentences parsed, heads.json as outside")
PY

# The SentencePiece support library (loaded at run time beside the code) and its bundled
# libsentencepiece: a .model tokenizer trained here on the corpus tokenizes inside the root as
# outside.
if command -v spm_train >/dev/null; then
  spm_train --input="$root/data/corpus.txt" --model_prefix="$root/data/spm" --vocab_size=60 --model_type=unigram \
    --minloglevel=2 >/dev/null 2>&1
  in_root "$binary" tokenize --tokenizer /data/spm.model /data/corpus.txt -q > "$work/spm-inside.jsonl"
  "$binary" tokenize --tokenizer "$root/data/spm.model" "$root/data/corpus.txt" -q > "$work/spm-outside.jsonl"
  cmp "$work/spm-inside.jsonl" "$work/spm-outside.jsonl"
  echo "check_bundled: a SentencePiece tokenizer ran in the bare root as outside"
else
  echo "check_bundled: spm_train not installed (Debian's sentencepiece): SentencePiece not checked"
fi

# 2. The Python module, with the libraries the interpreter and its own extension modules need
# added (from where this machine's loader finds them).
for object in "$interpreter" "$dynload"/*.so; do
  ldd "$object" | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r soname path; do
  [[ -e "$root/lib/x86_64-linux-gnu/$soname" ]] || cp -L "$path" "$root/lib/x86_64-linux-gnu/$soname"
done
in_root "$venv/bin/python" -c '
import headscan
report = headscan.scan("/data/demo.pt", "/data/corpus.txt", progress=False)
report.save("/out/python")
print("check_bundled: import headscan and scan() ran in the bare root:", report.json["heads"][1]["primary"])
'
in_root "$venv/bin/headscan" --version
