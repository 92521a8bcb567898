#!/usr/bin/env bash
# Installs the build dependencies (Debian packages only). Idempotent.
set -euo pipefail
pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev catch2 librapidcheck-dev libcli11-dev
      libxtensor-dev nlohmann-json3-dev ccache jq
      librsvg2-bin)  # rsvg-convert: certificate PNGs (optional at run time: SVG is always written)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
echo "setup: dependencies present"
