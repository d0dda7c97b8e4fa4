#!/usr/bin/env bash
# On a GPU machine that has CUDA and torch but not this project's other libraries (README,
# "GPUs"): installs the binaries scripts/gpu/bundle.sh built and packed into build-gpu/ against
# this machine's torch, builds the fixture models with this machine's torch, and runs the tests
# labelled gpu: the statistics on the GPU against the CPU (headscan_tests "[gpu]"), every
# fixture's heads.json with --device cuda against --device cpu (tests/gpu/check_cuda.py), and, where
# the Python has transformers, Hugging Face architectures on the GPU against transformers' attention.
#
#   scripts/gpu/build.sh [--no-tests]
#
# Environment: HEADSCAN_GPU_PYTHON, the Python with torch (default: python3 on PATH).
# Writes build-gpu/bin/ (wrappers that put build-gpu/lib and torch's libraries on the loader's
# path) and build-gpu/fixtures/. Exit 0 when every test passed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle=$root/build-gpu
python=${HEADSCAN_GPU_PYTHON:-python3}
if [[ ! -x $bundle/libexec/headscan && -f $root/build-gpu.tar.xz ]]; then
  tar -C "$root" -xJf "$root/build-gpu.tar.xz"
fi
if [[ ! -x $bundle/libexec/headscan ]]; then
  echo "build.sh: $bundle holds no headscan: run scripts/gpu/bundle.sh on the build machine and carry" \
       "build-gpu.tar.xz (or build-gpu/)" >&2
  exit 2
fi
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
if [[ ${torch_version%%+*} != "$(cut -d+ -f1 <"$bundle/TORCH")" ]]; then
  echo "build.sh: this machine's torch is $torch_version, build-gpu/ was built against $(cat "$bundle/TORCH");" \
       "bundle it against the same version" >&2
  exit 2
fi
mkdir -p "$bundle/bin"
for program in "$bundle"/libexec/*; do
  name=$(basename "$program")
  [[ $name == *.so ]] && continue
  cat >"$bundle/bin/$name" <<WRAPPER
#!/bin/sh
LD_LIBRARY_PATH="$bundle/lib:$torch_lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$bundle/libexec/$name" "\$@"
WRAPPER
  chmod +x "$bundle/bin/$name"
done
"$bundle/bin/headscan" --version
missing=$(LD_LIBRARY_PATH="$bundle/lib:$torch_lib" ldd "$bundle/libexec/headscan" | grep 'not found' || true)
if [[ -n $missing ]]; then
  echo "build.sh: libraries not found: $missing" >&2
  exit 1
fi
[[ ${1:-} == --no-tests ]] && exit 0

fixtures=$bundle/fixtures
mkdir -p "$fixtures"
for script in make_models make_circuit_models make_syntax_models make_random_models make_ablation_models \
              make_long_context_models; do
  "$python" "$root/tests/fixtures/$script.py" "$fixtures" >/dev/null
done
status=0
sh "$root/tests/gpu/run_if_gpu.sh" "$bundle/bin/headscan" "$bundle/bin/headscan_tests" "[gpu]" || status=$?
sh "$root/tests/gpu/run_if_gpu.sh" "$bundle/bin/headscan" "$python" "$root/tests/gpu/check_cuda.py" \
  "$bundle/bin/headscan" "$fixtures" "$bundle/gpu-check" "$root/tests/fixtures/compare_heads.py" || status=$?
# Hugging Face architectures on the GPU against transformers on the CPU, where this Python has them.
if "$python" -c 'import transformers, tokenizers' 2>/dev/null; then
  HEADSCAN_DEVICE=cuda HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 sh "$root/tests/gpu/run_if_gpu.sh" "$bundle/bin/headscan" \
    "$python" "$root/tests/hf/check_export_hf.py" "$bundle/bin/headscan" "$bundle/hf-export" || status=$?
else
  echo "skipped tests/hf/check_export_hf.py: $python has no transformers and tokenizers"
fi
exit "$status"
