#!/bin/sh
# The CUDA plugin (liboracle_device_cuda.so, docs/design.md "Backends") exports one
# symbol, its entry point: everything else inside it (reference, optimized,
# kernels) is local, so none of it can bind to `oracle`'s emulated copies or
# theirs to it. Usage: check_plugin_exports.sh PLUGIN
set -eu
got=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$got" = "oracle_device_pipeline " ] || { echo "FAIL: $1 exports: $got" >&2; exit 1; }
echo "ok: $1 exports only oracle_device_pipeline"
