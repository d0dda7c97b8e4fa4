#!/usr/bin/env bash
# Installs what headscan needs from Debian's packages (only what is missing), then configures and
# builds it in build/. Sourced by demo.sh and test.sh; safe to run again.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  cmake ninja-build g++ ccache pkg-config   # build tools
  libtorch-dev                              # runs the TorchScript models
  libopenblas0-openmp                       # fast BLAS for LibTorch (reference BLAS is ~6x slower)
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
  packages+=(python3-torch)                 # builds the fixture models of the tests
  packages+=(chromium)                      # browser tests open the HTML reports headless
  packages+=(sentencepiece)                 # spm_train/spm_encode: tests check .model tokenizers
fi

source "$root/scripts/install_packages.sh"
install_packages headscan "${packages[@]}"

[[ "${HEADSCAN_SETUP_NO_BUILD:-0}" == 1 ]] && exit 0
jobs=$(nproc)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$jobs"
