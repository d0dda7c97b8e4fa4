#!/usr/bin/env bash
# Installs what headscan needs, then configures and builds it in build/. Sourced by demo.sh and
# test.sh; safe to run again (a second run installs nothing and rebuilds only what changed).
#   * Debian's packages (only the missing ones; apt-get update runs only then);
#   * LibTorch: PyPI's torch wheel (scripts/requirements.txt, pinned), in the virtual environment
#     .venv inside the checkout (git ignores it); with HEADSCAN_WITH_TESTS=1 also the tests'
#     references (scripts/requirements-test.txt). Every package is pinned by scripts/constraints.txt.
# Environment: HEADSCAN_WITH_TESTS=1 (test dependencies too), HEADSCAN_SETUP_NO_BUILD=1 (install
# only), HEADSCAN_VENV_PYTHON (the Python that creates .venv; default python3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  cmake ninja-build g++ ccache pkg-config   # build tools
  python3 python3-venv                      # the virtual environment that holds torch (LibTorch)
  python3-dev                               # the Python module's headers (analyzer/python)
  nlohmann-json3-dev                        # heads.json, tokenizer.json, headscan.json
  libfmt-dev                                # message formatting
  libcli11-dev                              # command-line options
  libzip-dev                                # checks a model archive's zip before LibTorch reads it
  libarchive-dev                            # reads gzip, zstd and xz compressed corpora
  libssl-dev                                # SHA-256 fingerprints of a shard's inputs (merge checks them)
  libpcre2-dev                              # Unicode regexes of tokenizer pre-tokenizers
  libutf8proc-dev                           # tokenizer normalizers: NFC/NFKC…, lowercase, categories
  libsentencepiece-dev                      # SentencePiece .model tokenizers (exact spm_encode ids)
  libcairo2-dev                             # draws the PNG plots
  libpng-dev                                # encodes the plots (faster settings than cairo's writer)
  libpango1.0-dev                           # lays out plot text in any script
  liblink-grammar-dev                       # parses plain English text for syntactic heads
  link-grammar-dictionaries-en              # link-grammar's English dictionary
  fonts-dejavu-core                         # plot text: Latin, Greek, Cyrillic
  fonts-noto-cjk                            # plot text: Chinese, Japanese, Korean tokens
  fonts-noto-color-emoji                    # plot text: emoji tokens
  catch2                                    # unit tests
)
if [[ "${HEADSCAN_WITH_TESTS:-0}" == 1 ]]; then
  packages+=(chromium)                      # browser tests open the HTML reports headless
  packages+=(sentencepiece)                 # spm_train/spm_encode: tests check .model tokenizers
fi

source "$root/scripts/install_packages.sh"
install_packages headscan "${packages[@]}"

# The virtual environment with PyPI's torch (the default Linux wheel is built for CUDA 13.0: its
# CMake config looks for the CUDA toolkit; the binary runs on machines without a GPU).
venv="$root/.venv"
python=${HEADSCAN_VENV_PYTHON:-python3}
if [[ ! -x "$venv/bin/python" ]]; then
  echo "headscan: creating $venv" >&2
  "$python" -m venv "$venv"
fi
requirements=(-r "$root/scripts/requirements.txt")
[[ "${HEADSCAN_WITH_TESTS:-0}" == 1 ]] && requirements+=(-r "$root/scripts/requirements-test.txt")
# uv installs the requirements (pip only installs uv): it installs torch and its CUDA libraries (3 GB)
# from its cache in seconds where pip unpacks them again for a minute and a half, in this venv and
# in the tests' (tests/python/run.sh, tests/kvpress/run.sh). Copies, not hard links into its cache.
if ! { "$venv/bin/python" -m pip install -q --disable-pip-version-check uv -c "$root/scripts/constraints.txt" &&
       "$venv/bin/uv" pip install -q --link-mode=copy --python "$venv/bin/python" "${requirements[@]}" \
         -c "$root/scripts/constraints.txt"; }; then
  echo "headscan: pip and uv could not install ${requirements[*]} into $venv; they need PyPI (or a mirror set in" \
       "PIP_INDEX_URL and UV_INDEX_URL). To build against a LibTorch you already have, see README, \"LibTorch: versions and your" \
       "own\"" >&2
  exit 1
fi

[[ "${HEADSCAN_SETUP_NO_BUILD:-0}" == 1 ]] && exit 0
torch_prefix=$("$venv/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
jobs=$(nproc)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DHEADSCAN_PYTHON="$venv/bin/python" -DPython_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build "$root/build" -j "$jobs"
