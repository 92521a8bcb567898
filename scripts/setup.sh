#!/usr/bin/env bash
# Installs the build dependencies (Debian packages) and the Python packages the
# cross-check tests use (PyPI, never a product dependency). Idempotent.
set -euo pipefail
pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev catch2 librapidcheck-dev libcli11-dev
      libxtensor-dev nlohmann-json3-dev ccache jq python3 python3-pip python3-dev
      time  # GNU time: peak RSS in cli_bench_rss_bound and scripts/certify_vs_peer.sh
      libopenmpi-dev openmpi-bin  # MPI: mpirun sharding and --tp across ranks (docs/scale.md; optional: ORACLE_ENABLE_MPI)
      librsvg2-bin)  # rsvg-convert: certificate PNGs (optional at run time: SVG is always written)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# audit/tests (cli_interop_*): reading dumps with safetensors + numpy from Python;
# the Python module (python/, docs/python.md): nanobind + scikit-build-core to build it, pytest to test it.
if ! python3 -c "import safetensors, numpy, nanobind, scikit_build_core, pytest" >/dev/null 2>&1; then
  py_pkgs=(safetensors numpy nanobind scikit-build-core pytest)
  python3 -m pip install --quiet "${py_pkgs[@]}" 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages "${py_pkgs[@]}"
fi
echo "setup: dependencies present"
