#!/usr/bin/env python3
"""Mutation audit (docs/testing.md "Mutation audit"): how many plausible one-token bugs the
tests miss. Not part of default CI: every mutant is an incremental build and a test run.

    scripts/mutation_audit.py --folder reference/generate --seed 1 --count 15 \\
        --targets "test_stop prop_stop test_generate" --tests "^(test_stop|prop_stop|test_generate)$" \\
        [--build build] [--timeout 600] [--md out.md] [--json out.json] [--list]

Mutation operators, on code only (string literals and comments are masked; operators must be
written with spaces around them, the project's style, so `vector<int>` or `->` never match):
  relational   < <=, <= <, > >=, >= >, == !=, != ==
  arithmetic   + -, - +, * /
  logical      && ||, || &&
  constant     an integer literal n -> n + 1 and n - 1 (0 -> 1)
  condition    `if (C)` -> `if (!(C))` (single-line conditions)
  swap         the two arguments of std::min / std::max / a two-argument call `f(a, b)` with
               plain identifiers
Sites are collected from every .cpp/.cu file of --folder (headers with --headers; not tests/), or only
from the files --files names (globs inside --folder, each optionally FILE:A-B for lines A..B only, e.g. --folder tools
--files "shard.cpp cmd_merge.cpp cmd_replay.cpp:188-216"), sampled with
--seed, and applied one at a time to the working tree, each restored (byte for byte, checked)
before the next, also on Ctrl-C. A mutant that does not compile is reported `invalid`; one
whose tests all pass `survived` (file:line, the mutation); otherwise `killed`.

Trivial Compiler Equivalence (Papadakis et al., ICSE 2015): before the build, the mutated
translation unit is compiled alone with its own command from <build>/compile_commands.json
(the project's Release flags, no -g) into a temporary object and compared byte for byte with
the unmutated file's object compiled the same way. Identical objects are `equivalent (TCE)`:
no test can tell them apart, so they are not built or tested, and the summary gives both the
raw survival (TCE mutants counted as survivors) and the TCE-adjusted one (left out of the
denominator). A mutant whose TU does not compile is `invalid` without the full build.
--no-tce skips this step (headers are never TCE-checked: they have no compile command).
"""
import argparse
import glob
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REL = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "), (" != ", " == ")]
ARITH = [(" + ", " - "), (" - ", " + "), (" * ", " / ")]
LOGIC = [(" && ", " || "), (" || ", " && ")]


def code_mask(line, in_block):
    """Per character: True where it is code (not a string/char literal or comment)."""
    mask = [True] * len(line)
    i, n = 0, len(line)
    while i < n:
        if in_block:
            end = line.find("*/", i)
            stop = n if end < 0 else end + 2
            for k in range(i, stop):
                mask[k] = False
            i, in_block = stop, end < 0
            continue
        c = line[i]
        if line.startswith("//", i):
            for k in range(i, n):
                mask[k] = False
            break
        if line.startswith("/*", i):
            in_block = True
            continue
        if c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            for k in range(i, min(j + 1, n)):
                mask[k] = False
            i = j + 1
            continue
        i += 1
    return mask, in_block


def sites_of(path, rel):
    out = []
    in_block = False
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for no, line in enumerate(lines, 1):
        mask, next_block = code_mask(line, in_block)
        in_block = next_block
        s = line.strip()
        if not s or s.startswith("#") or "fault::active" in line or "static_assert" in line:
            continue

        def code_at(a, b):
            return all(mask[a:b])

        for kind, table in (("relational", REL), ("arithmetic", ARITH), ("logical", LOGIC)):
            for old, new in table:
                for m in re.finditer(re.escape(old), line):
                    if code_at(m.start(), m.end()):
                        out.append(dict(file=rel, line=no, col=m.start(), old=old, new=new, kind=kind))
        for m in re.finditer(r"(?<![\w.])(\d+)(?![\w.'])", line):
            if code_at(m.start(), m.end()) and not line[:m.start()].rstrip().endswith("["):
                v = int(m.group(1))
                for w in ([v + 1, v - 1] if v > 0 else [1]):
                    out.append(dict(file=rel, line=no, col=m.start(), old=m.group(1), new=str(w), kind="constant"))
        m = re.search(r"\bif \((.*)\) (?:\{|return|continue|break|[a-z_]+ ?[=(+-])", line)
        if m and code_at(m.start(), m.end(1)) and m.group(1).count("(") == m.group(1).count(")"):
            old = "if (" + m.group(1) + ")"
            out.append(dict(file=rel, line=no, col=m.start(), old=old, new="if (!(" + m.group(1) + "))",
                            kind="condition"))
        for m in re.finditer(r"\b((?:std::)?\w+)\((\w+), (\w+)\)", line):
            if code_at(m.start(), m.end()) and m.group(2) != m.group(3):
                new = "%s(%s, %s)" % (m.group(1), m.group(3), m.group(2))
                out.append(dict(file=rel, line=no, col=m.start(), old=m.group(0), new=new, kind="swap"))
    return out


def collect(repo, folder, headers, files=None):
    """Sites of every source file under folder, or only of the named files (globs, relative to folder)."""
    sites = []
    if files:
        for spec in files:
            pat, _, span = spec.partition(":")  # FILE or FILE:A-B (lines A..B only)
            lo, _, hi = span.partition("-")
            for p in sorted(glob.glob(os.path.join(repo, folder, pat))):
                sites += [s for s in sites_of(p, os.path.relpath(p, repo))
                          if not span or int(lo) <= s["line"] <= int(hi)]
        return sites
    base = os.path.join(repo, folder)
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x != "tests")
        for fn in sorted(files):
            if fn.endswith((".cpp", ".cu") + ((".h", ".cuh") if headers else ())):
                p = os.path.join(d, fn)
                sites += sites_of(p, os.path.relpath(p, repo))
    return sites


def apply(repo, site):
    path = os.path.join(repo, site["file"])
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    line = lines[site["line"] - 1]
    assert line[site["col"]:site["col"] + len(site["old"])] == site["old"], site
    lines[site["line"] - 1] = line[:site["col"]] + site["new"] + line[site["col"] + len(site["old"]):]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return line.strip(), lines[site["line"] - 1].strip()


def run(cmd, timeout, cwd):
    """Runs cmd in its own process group; on timeout the whole group is killed."""
    env = dict(os.environ, RC_PARAMS=os.environ.get("RC_PARAMS", "noshrink=1"))  # a failing property need not shrink
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, env=env)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out


def relocate(repo, site, before):
    """A stored mutant's site in the current tree: its line found by its text (`before`, the
    stripped line) when edits above it moved it; None when that line is no longer there once
    (the code was rewritten: the mutant no longer exists)."""
    with open(os.path.join(repo, site["file"]), encoding="utf-8") as f:
        lines = f.read().split("\n")
    def fits(no):
        line = lines[no - 1]
        return line.strip() == before and line[site["col"]:site["col"] + len(site["old"])] == site["old"]
    if 1 <= site["line"] <= len(lines) and fits(site["line"]):
        return site
    hits = [no for no in range(1, len(lines) + 1) if fits(no)]
    return dict(site, line=hits[0]) if len(hits) == 1 else None


class Tce:
    """Compiles one translation unit alone (its compile_commands.json command, -o a temp file)."""

    def __init__(self, build, tmp):
        path = os.path.join(build, "compile_commands.json")
        self.cmds = {}
        if os.path.exists(path):
            for e in json.load(open(path)):
                self.cmds[os.path.realpath(e["file"])] = (e["directory"], shlex.split(e["command"]))
        self.tmp, self.orig = tmp, {}

    def compile(self, src, out):
        d, argv = self.cmds[os.path.realpath(src)]
        args, i = [], 0
        while i < len(argv):
            if argv[i] == "-o":
                i += 2
                continue
            args.append(argv[i])
            i += 1
        launcher = ["ccache"] if shutil.which("ccache") else []  # the build's own compile then hits the cache
        rc, _ = run(launcher + args + ["-o", out], 3600, d)
        return rc == 0

    def status(self, src, original):
        """None (not checkable), "invalid" or "equivalent (TCE)" for the mutated src, else "differs"."""
        real = os.path.realpath(src)
        if real not in self.cmds:
            return None
        if real not in self.orig:  # the unmutated TU, compiled from the backup at the same path
            obj = os.path.join(self.tmp, "orig_%d.o" % len(self.orig))
            mutated = os.path.join(self.tmp, "mutated_src")
            shutil.copyfile(src, mutated)
            shutil.copyfile(original, src)
            try:
                self.orig[real] = obj if self.compile(src, obj) else None
            finally:
                shutil.copyfile(mutated, src)
        if self.orig[real] is None:
            return None
        obj = os.path.join(self.tmp, "mutant.o")
        if os.path.exists(obj):
            os.remove(obj)
        if not self.compile(src, obj):
            return "invalid"
        with open(obj, "rb") as f1, open(self.orig[real], "rb") as f2:
            return "equivalent (TCE)" if f1.read() == f2.read() else "differs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=15)
    ap.add_argument("--targets", required=True, help="build targets (space-separated)")
    ap.add_argument("--tests", required=True, help="ctest -R regex")
    ap.add_argument("--build", default="build")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per ctest run")
    ap.add_argument("--stop-on-failure", action="store_true",
                    help="ctest --stop-on-failure: a mutant is killed at its first failing test (faster)")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--list", action="store_true", help="only list the sampled mutants")
    ap.add_argument("--files", help="only these files of --folder (space-separated globs, FILE:A-B for a line range)")
    ap.add_argument("--headers", action="store_true", help="mutate headers too (rebuilds much more)")
    ap.add_argument("--no-tce", action="store_true", help="skip the Trivial Compiler Equivalence check")
    ap.add_argument("--rerun", help="a previous --json report: re-run its survivors (e.g. with more tests); a "
                    "survivor whose line moved is found by its text, one whose line is gone is reported `gone`")
    a = ap.parse_args()
    repo = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    sites = collect(repo, a.folder, a.headers, a.files.split() if a.files else None)
    rng = random.Random(a.seed)
    sample = rng.sample(sites, min(a.count, len(sites)))
    gone = []
    if a.rerun:
        keys = ("file", "line", "col", "old", "new", "kind")
        sample = []
        for m in json.load(open(a.rerun))["mutants"]:
            if m["status"] != "survived":
                continue
            s = relocate(repo, {k: m[k] for k in keys}, m["before"])
            if s:
                sample.append(s)
            else:
                gone.append(dict(m, status="gone"))
    print("%d mutation sites in %s; %d sampled (seed %d)" % (len(sites), a.folder, len(sample), a.seed), flush=True)
    if a.list:
        for s in sample:
            print("%s:%d %s: '%s' -> '%s'" % (s["file"], s["line"], s["kind"], s["old"], s["new"]))
        return
    backup_dir = tempfile.mkdtemp(prefix="mutation_audit_")
    tce = None if a.no_tce else Tce(os.path.join(repo, a.build), backup_dir)
    results = []
    current = {}

    def restore():
        if current:
            shutil.copyfile(current["backup"], current["path"])
            current.clear()

    def on_signal(signum, frame):
        restore()
        sys.exit(130)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        for i, s in enumerate(sample):
            path = os.path.join(repo, s["file"])
            backup = os.path.join(backup_dir, "orig")
            shutil.copyfile(path, backup)
            current.update(path=path, backup=backup)
            t0 = time.time()
            try:
                before, after = apply(repo, s)
                status = tce.status(path, backup) if tce else None
                if status in ("invalid", "equivalent (TCE)"):
                    pass
                elif run(["cmake", "--build", a.build, "-j2", "--target"] + a.targets.split(), 3600, repo)[0] != 0:
                    status = "invalid"
                else:
                    rc, out = run(["ctest", "--test-dir", a.build, "-R", a.tests, "--timeout", str(a.timeout)] +
                                  (["--stop-on-failure"] if a.stop_on_failure else []),
                                  a.timeout * 4, repo)
                    status = "survived" if rc == 0 else "killed"
            finally:
                restore()
                with open(path, "rb") as f1, open(backup, "rb") as f2:
                    assert f1.read() == f2.read(), "restore failed for " + path
            r = dict(s, status=status, before=before, after=after, seconds=round(time.time() - t0, 1))
            results.append(r)
            print("[%d/%d] %-8s %s:%d %s '%s' -> '%s' (%.0f s)" % (i + 1, len(sample), status, s["file"], s["line"],
                                                                s["kind"], s["old"].strip(), s["new"].strip(),
                                                                r["seconds"]), flush=True)
    finally:
        restore()
        shutil.rmtree(backup_dir, ignore_errors=True)
    # rebuild the restored sources so the build folder matches the tree again
    run(["cmake", "--build", a.build, "-j2", "--target"] + a.targets.split(), 3600, repo)
    for g in gone:
        print("gone     %s:%d '%s' (the line no longer exists)" % (g["file"], g["line"], g["before"]), flush=True)
    results += gone
    valid = [r for r in results if r["status"] not in ("invalid", "gone")]
    survived = [r for r in results if r["status"] == "survived"]
    tce_eq = [r for r in results if r["status"] == "equivalent (TCE)"]
    raw = len(survived) + len(tce_eq)
    summary = dict(folder=a.folder, seed=a.seed, sites=len(sites), sampled=len(sample), valid=len(valid),
                   killed=len(valid) - raw, survived=len(survived), tce_equivalent=len(tce_eq),
                   raw_survival=raw / len(valid) if valid else 0.0,
                   tce_survival=len(survived) / (len(valid) - len(tce_eq)) if len(valid) > len(tce_eq) else 0.0,
                   targets=a.targets, tests=a.tests)
    print("%(folder)s: %(sampled)d sampled, %(valid)d compiled, %(killed)d killed, %(survived)d survived, "
          "%(tce_equivalent)d equivalent (TCE); survival raw %(raw_survival).1f%% (TCE counted as survivors), "
          "TCE-adjusted %(tce_survival).1f%%" % dict(summary, raw_survival=100 * summary["raw_survival"],
                                                     tce_survival=100 * summary["tce_survival"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(summary=summary, mutants=results), f, indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write("| status | where | mutation | line after |\n| --- | --- | --- | --- |\n")
            for r in results:
                f.write("| %s | `%s:%d` | %s `%s` → `%s` | `%s` |\n" % (r["status"], r["file"], r["line"], r["kind"],
                                                                   r["old"].strip(), r["new"].strip(),
                                                                   r["after"].replace("|", "\\|")))
    sys.exit(0)


if __name__ == "__main__":
    main()
