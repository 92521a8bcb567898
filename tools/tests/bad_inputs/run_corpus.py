#!/usr/bin/env python3
"""Runs the bad-input corpus written by make_corpus.py through the `oracle` CLI.

    run_corpus.py --oracle BIN --corpus DIR [--only SUBSTRING] [-v]

For every case in DIR/cases.json it checks: the exit code (2 unless the case
says otherwise), no signal, the time bound (default 60 s, then killed), exactly
one stderr line that names the file and matches the field regex, no raw
control byte (ESC, CR, ...) in stderr, none of the case's forbidden texts,
with --json one {"error": {...}} object on stdout, and that the corpus folder
is unchanged afterwards (no output or temporary file left behind, no input
modified). Exit 0 when every case passes, 1 otherwise (each failure printed).
"""
import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time


def snapshot(root):
    """(path, kind, size, mtime) of every file under root (FIFOs included, not read);
    directories by name only (a temporary file created and removed touches their mtime)."""
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out.add((os.path.join(d, n), "dir"))
        for n in files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out.add((p, st.st_mode >> 12, st.st_size, st.st_mtime_ns))
    return out


def limits(c):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal: a full disk
        if "ulimit_v_kb" in c:
            b = c["ulimit_v_kb"] * 1024
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
        if "fsize_bytes" in c:
            b = c["fsize_bytes"]
            resource.setrlimit(resource.RLIMIT_FSIZE, (b, b))
    return apply


def check(c, oracle, corpus, json_mode):
    argv = [oracle] + c["argv"] + (["--json"] if json_mode else [])
    before = snapshot(corpus)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limits(c),
                           timeout=c.get("timeout", 60), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return ["timed out after %s s (a hang)" % c.get("timeout", 60)], float(c.get("timeout", 60))
    secs = time.monotonic() - t0
    errs = []
    err = p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    want = c.get("exit", 2)
    if p.returncode < 0:
        errs.append("killed by signal %d" % -p.returncode)
    elif p.returncode != want:
        errs.append("exit %d, want %d" % (p.returncode, want))
    lines = c.get("stderr_lines", 1)
    n = err.count("\n")
    if n != lines or (lines == 1 and not err.endswith("\n")):
        errs.append("%d stderr lines, want %d" % (n, lines))
    if lines == 1:
        if c["file"] is not None and c["file"] not in err:
            errs.append("stderr does not name the file %r" % c["file"])
        if c["field"] is not None and not re.search(c["field"], err, re.I):
            errs.append("stderr does not match the field %r" % c["field"])
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", err):
        errs.append("raw control bytes in stderr")
    for bad in [c["forbid"]] if "forbid" in c else []:
        if re.search(bad, err):
            errs.append("stderr contains forbidden %r" % bad)
    if "stdout_re" in c and not json_mode and not re.search(c["stdout_re"], out):
        errs.append("stdout does not match %r" % c["stdout_re"])
    if c.get("stdout_empty") and not json_mode and out:
        errs.append("stdout not empty (work done before the error): %r" % out[:80])
    if json_mode:
        try:
            j = json.loads(out.strip().splitlines()[-1])
            e = j["error"]
            if set(e) != {"file", "field", "message", "exit_code"} or e["exit_code"] != p.returncode:
                errs.append("--json error object malformed: %s" % out.strip()[:200])
        except (ValueError, KeyError, IndexError, TypeError):
            errs.append("--json: no error object on stdout: %r" % out[:200])
    after = snapshot(corpus)
    if after != before:
        changed = sorted({x[0] for x in after ^ before})
        errs.append("corpus folder changed (output or temporary file left, input modified): %s" % changed[:4])
    if errs:
        errs.append("stderr: %r" % err[:300])
    return errs, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    cases = json.load(open(os.path.join(a.corpus, "cases.json")))
    failed, runs, worst = 0, 0, (0.0, "")
    for c in cases:
        if a.only not in c["id"]:
            continue
        modes = [False] + ([True] if c.get("json") else [])
        for json_mode in modes:
            runs += 1
            errs, secs = check(c, a.oracle, a.corpus, json_mode)
            worst = max(worst, (secs, c["id"]))
            name = c["id"] + (" --json" if json_mode else "")
            if errs:
                failed += 1
                print("FAIL %s: %s\n  argv: %s" % (name, "; ".join(errs), c["argv"]))
            elif a.v:
                print("ok   %s (%.2f s)" % (name, secs))
    print("bad-input corpus: %d runs of %d cases, %d failed (slowest %.2f s: %s)" %
          (runs, len(cases), failed, worst[0], worst[1]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
