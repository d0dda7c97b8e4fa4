#!/usr/bin/env bash
# Builds headscan here (scripts/setup.sh, the pinned torch wheel) and packs what a GPU machine
# needs into build-gpu/ (git-ignored, a few tens of MiB), for scripts/gpu/build.sh to install and
# test there. The GPU machine has CUDA and the same torch (torch 2.11.0+cu130, whose LibTorch
# headscan links: no torch library is packed) but not cairo, pango, libarchive, libzip, utf8proc,
# PCRE2 or link-grammar: every shared library the binaries load that is neither glibc's, the C++
# runtime's nor torch's own is copied into build-gpu/lib, the way auditwheel repairs a wheel.
#
#   scripts/gpu/bundle.sh        then carry build-gpu.tar.xz (and the working tree) to the GPU machine
#
# build-gpu.tar.xz (about 20 MiB) is build-gpu/ (about 70 MiB, half of it ICU's data, which
# libarchive needs through libxml2) compressed, for copies limited in size; build.sh unpacks it.
#
# build-gpu/
#   libexec/    headscan, headscan_tests, headscan_bench_forward, headscan_bench_classifiers and
#               the SentencePiece shim (loaded from beside the executable)
#   lib/        the non-torch shared libraries they need
#   TORCH       the torch version they were built against
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HEADSCAN_WITH_TESTS=1 bash "$root/scripts/setup.sh"
build=$root/build
out=$root/build-gpu
rm -rf "$out"
mkdir -p "$out/libexec" "$out/lib"
programs=(headscan tests/headscan_tests bench/headscan_bench_forward bench/headscan_bench_classifiers)
for program in "${programs[@]}"; do cp "$build/$program" "$out/libexec/"; done
shim=$(find "$build" -name 'libheadscan_sentencepiece.so' -print -quit)
[[ -n $shim ]] && cp "$shim" "$out/libexec/"
"$root/.venv/bin/python" -c 'import torch; print(torch.__version__)' >"$out/TORCH"

torch_lib=$("$root/.venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
site=$(dirname "$torch_lib")
# glibc, the C++ runtime and the dynamic loader: every Linux has them (newer ones on Ubuntu 24.04).
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
for binary in "$out"/libexec/*; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  [[ $name =~ $system ]] && continue
  [[ $path == "$site"/* ]] && continue  # torch's and NVIDIA's wheels: the GPU machine's own torch has them
  cp -L "$path" "$out/lib/$name"
done
XZ_OPT=-T0 tar -C "$root" -cJf "$root/build-gpu.tar.xz" build-gpu
echo "build-gpu: $(du -sh "$out" | cut -f1) ($(ls "$out/lib" | wc -l) libraries), built against torch $(cat "$out/TORCH");" \
     "build-gpu.tar.xz: $(du -sh "$root/build-gpu.tar.xz" | cut -f1)"
