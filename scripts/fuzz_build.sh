# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: installs clang and the libraries the
# LibTorch-free build needs from Debian's packages (only what is missing) and configures that build
# in build-fuzz/ (HEADSCAN_FUZZ=ON: the tokenizer, corpus, metadata, archive, statistics, shard-state,
# option and table libraries, instrumented with ASan, UBSan and libFuzzer's coverage; their unit
# tests and fuzz targets). Sets $build.
packages=(
  cmake ninja-build pkg-config ccache
  clang                                      # compiler; its libclang-rt-*-dev holds libFuzzer and the sanitizers
  nlohmann-json3-dev libfmt-dev libpcre2-dev libutf8proc-dev libsentencepiece-dev liblink-grammar-dev libzip-dev
  libarchive-dev
  catch2                                     # the unit tests
  link-grammar-dictionaries-en               # test_link_grammar.cpp parses English
)
source "$root/scripts/install_packages.sh"
install_packages "$(basename "$0")" "${packages[@]}"

build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADSCAN_FUZZ=ON \
  >/dev/null
