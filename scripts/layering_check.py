#!/usr/bin/env python3
"""The layering test (docs/design.md, folder map): every quoted #include in a
source file must point at its own folder or a layer below it. Exit 0 when the
tree obeys the rules, 1 (with one line per violation) when it does not.

  layering_check.py ROOT            check the tree at ROOT
  layering_check.py ROOT --prove    copy the sources to a scratch tree, plant
                                    an upward include in each probe file,
                                    and exit 0 only if every plant is caught
"""
import pathlib, re, shutil, sys, tempfile

REF = ["base", "reference/model", "reference/tokenizer", "reference/compute",
       "reference/sampling", "reference/generate"]
BOTTOM = ["numerics", "faults"]
# Folder (longest prefix wins) -> folders it may include. A folder may always
# include itself.
RULES = {
    "numerics": [],  # the standard library only (faults/ plants its hooks from the layers above)
    "faults": [],
    "base": BOTTOM,
    "reference/model": BOTTOM + ["base"],
    "reference/tokenizer": BOTTOM + ["base", "reference/model"],
    "reference/compute": BOTTOM + ["base", "reference/model"],
    "reference/sampling": BOTTOM + ["base"],
    "reference/generate": BOTTOM + REF,
    "reference/tests": BOTTOM + REF + ["tests_common"],
    "audit/interop": BOTTOM + REF,  # logit stats, compare, dumps, KLD base files, quantize, SVG
    "audit/certify": BOTTOM + REF + ["audit/interop"],
    "audit/replay": BOTTOM + REF,  # replay never needs certify or interop
    "audit/tests": BOTTOM + REF + ["audit", "tests_common"],
    "kernels": BOTTOM,
    # the kernel tests run the kernel case registry (optimized/kernel_cases.h), which
    # needs the reference functions and so cannot live in kernels/
    "kernels/tests": BOTTOM + REF + ["kernels", "optimized", "tests_common"],
    "optimized": BOTTOM + REF + ["kernels"],
    "optimized/tests": BOTTOM + REF + ["kernels", "optimized", "tests_common"],
    "distributed": BOTTOM + REF,  # communicators + tensor-parallel glue; reference/ never includes it
    "distributed/tests": BOTTOM + REF + ["distributed", "tests_common"],
    # the CLI sees the device backends only through their interface (EXTRA below):
    # the emulated one is linked in, the CUDA one is a plugin (docs/design.md "Backends")
    "tools": BOTTOM + REF + ["audit", "distributed"],
    "property_tests": BOTTOM + REF + ["audit", "tests_common"],
    "fuzz": BOTTOM + REF + ["audit"],
    "golden": BOTTOM + REF + ["tests_common", "kernels", "optimized"],
    "tests_common": BOTTOM + REF,
    # The public C++ API (docs/library.md): headers in include/llm_oracle/ (included as
    # "llm_oracle/..."), which expose nothing internal but the InputError header; the
    # wrappers in api/; the Python module and the example consumer see the headers only.
    "include": [],
    "api": BOTTOM + REF + ["audit", "include"],
    "api/tests": BOTTOM + REF + ["audit", "include", "api", "tests_common"],
    "python": ["include"],
    "examples": ["include"],
}
# Single files a folder may include beyond its rules: the installed public headers
# include the one self-contained internal header they ship with; the tools, the
# device backends' interface.
EXTRA = {"include": ["base/errors.h"], "tools": ["optimized/device_pipeline.h"]}
SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Probes for --prove: (file, an include that must be refused there).
PROBES = [("numerics/numerics.h", "base/errors.h"),
          ("numerics/numerics.h", "faults/fault.h"),
          ("base/errors.h", "reference/model/model.h"),
          ("reference/model/model.h", "reference/compute/forward.h"),
          ("reference/sampling/sampler.h", "reference/model/model.h"),
          ("reference/compute/forward.h", "audit/replay/replay.h"),
          ("reference/generate/generate.h", "audit/certify/certify.h"),
          ("kernels/matmul.cuh", "reference/compute/ops.h"),
          ("kernels/attention.cuh", "optimized/kernel_cases.h"),
          ("numerics/dtype.h", "reference/model/model.h"),
          ("tools/cmd_run.cpp", "optimized/backend.h"),
          ("tools/device_backend.cpp", "kernels/matmul.cuh"),
          ("audit/replay/replay.h", "tools/commands.h"),
          ("audit/replay/replay.h", "audit/certify/certify.h"),
          ("audit/interop/compare.h", "audit/certify/certify.h"),
          ("reference/compute/tensor_split.h", "distributed/communicator.h"),
          ("distributed/communicator.h", "tools/commands.h"),
          ("include/llm_oracle/ops.h", "reference/compute/ops.h"),
          ("python/src/arrays.h", "reference/model/model.h"),
          ("reference/compute/ops.h", "llm_oracle/ops.h")]


def layer_of(rel):
    best = None
    for folder in RULES:
        if rel.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check(root):
    root = pathlib.Path(root)
    bad = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in SUFFIXES or rel.startswith(("build", ".")):
            continue
        layer = layer_of(rel)
        if layer is None:
            continue
        allowed = [layer] + RULES[layer]
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            if "/" not in inc:  # local header: same folder or tests_common
                if (path.parent / inc).exists() or (root / "tests_common" / inc).exists():
                    continue
                bad.append(f"{rel}: includes \"{inc}\", which is neither beside it nor in tests_common/")
                continue
            if inc in EXTRA.get(layer, []):
                continue
            target = "include" if inc.startswith("llm_oracle/") else layer_of(inc)
            if target is None and (root / inc).exists():
                target = inc.split("/")[0]
            if target is None:
                continue  # not one of ours (e.g. a generated file)
            if not any(target == a or target.startswith(a + "/") for a in allowed):
                bad.append(f"{rel}: includes \"{inc}\" ({target}), but {layer}/ may include only "
                           f"{', '.join(sorted(set(allowed)))}")
    return bad


def prove(root):
    missed = 0
    for probe, inc in PROBES:
        with tempfile.TemporaryDirectory() as tmp:
            for path in pathlib.Path(root).rglob("*"):
                rel = path.relative_to(root).as_posix()
                if path.is_file() and path.suffix in SUFFIXES and not rel.startswith(("build", ".")):
                    dst = pathlib.Path(tmp) / rel
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dst)
            target = pathlib.Path(tmp) / probe
            target.write_text(target.read_text() + f'\n#include "{inc}"\n')
            found = [b for b in check(tmp) if b.startswith(probe + ":") and inc in b]
            print(("caught" if found else "MISSED") + f": {probe} including {inc}")
            missed += not found
    return missed


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    if "--prove" in sys.argv[2:]:
        clean = check(root)
        if clean:
            print("the tree itself violates the rules; fix it first", file=sys.stderr)
        sys.exit(1 if (prove(root) or clean) else 0)
    violations = check(root)
    for v in violations:
        print(v)
    print(f"layering: {len(violations)} violation(s)")
    sys.exit(1 if violations else 0)
