#!/bin/sh
# Runs a GPU test where LibTorch sees a GPU, else reports it skipped (exit 77, SKIP_RETURN_CODE):
#   run_if_gpu.sh HEADSCAN COMMAND [ARGS...]
# `headscan --version` says how many GPUs its LibTorch sees ("no GPU visible", "CPU only").
headscan=$1
shift
version=$("$headscan" --version) || exit 1
case $version in
  *"no GPU visible"* | *"CPU only"*)
    echo "skipped: $version"
    exit 77 ;;
esac
exec "$@"
