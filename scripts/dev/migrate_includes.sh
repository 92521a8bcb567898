#!/usr/bin/env bash
# Rewrites old flat-layout include paths in the given files (or --all tracked files).
exec python3 "$(dirname "$0")/migrate_includes.py" "$@"
