#!/usr/bin/env python3
"""The ISA dispatch's build contract (reference/compute/isa.h), checked on what
the compiler produced rather than on the flags we asked for:

  1. The SIMD translation units (isa_avx2.cpp.o, isa_avx512.cpp.o) define no
     weak / COMDAT symbol and no global one but their table getter: an inline
     or template function they instantiated with -mavx2 / -mavx512f could
     otherwise be the copy the linker keeps for the baseline code, and the
     binary would die with SIGILL on an older CPU.
  2. The scalar TU (isa_scalar.cpp.o) uses no VEX/EVEX instruction (unless
     --native ON); the AVX2 TU uses ymm and no zmm register, the AVX-512 TU zmm
     (each got its own flags; not checked with --native ON, where -march=native
     may give the AVX2 TU AVX-512 too).
  3. In the linked binary, no function outside oracle::isa's internal
     namespace uses a VEX/EVEX instruction (ymm, zmm, v-prefixed mnemonics):
     the rest of the project is baseline x86-64. Skipped for a -march=native
     build (--native ON), where that is what was asked for.
  4. Fused multiply-add instructions only where the contract puts them
     (numerics v2, docs/numerics.md §1): in the binary, only inside the SIMD
     paths' internal functions (the dot lanes and the offset dequantization,
     written as _mm256_fmadd_ps / _mm512_fmadd_ps) and in libm's fmaf, which
     num::fma_rn calls from baseline code; each SIMD TU must contain them (a
     path that lost its fma would be a v1 path). Skipped for --native ON,
     where every TU may inline fma_rn (and -ffp-contract=off still forbids
     the compiler from fusing on its own).

Usage: isa_check.py --objects OBJ... [--binary BIN] [--native ON|OFF]
       isa_check.py --prove        (each check bites on planted input)
Exit 0 when every check passes, 1 with one line per violation.
"""
import argparse
import re
import subprocess
import sys

GETTERS = ("oracle::isa::avx2_kernels()", "oracle::isa::avx512_kernels()")
INTERNAL = "oracle::isa::(anonymous namespace)::"
# libm's fused multiply-add (glibc's fmaf and its ifunc variants), called by num::fma_rn in baseline TUs.
LIBM_FMA = re.compile(r"^_*fmaf?(_fma3?|_fma4|_sse2)?(@.*)?$")
FMA = re.compile(r"^vf(n?)m(add|sub|addsub|subadd)")
# One disassembled instruction: "  addr:\tmnemonic operands".
INSN = re.compile(r"^\s*[0-9a-f]+:\s+([a-z][a-z0-9.]*)\s*(.*)$")
FUNC = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def is_vex(mnemonic, operands):
    """VEX/EVEX-encoded: every AVX instruction is v-prefixed in AT&T syntax
    (vmovss, vaddps, vzeroupper, ...); ymm/zmm/k registers only exist there."""
    if "%ymm" in operands or "%zmm" in operands or re.search(r"%k[0-7]\b", operands):
        return True
    return mnemonic.startswith("v") and mnemonic not in ("verr", "verw")


def weak_or_global_symbols(nm_lines):
    """(kind, name) for symbols check 1 forbids, from `nm -C --defined-only`."""
    bad = []
    for line in nm_lines:
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind in "WVuvw":
            bad.append((kind, name))
        elif kind in "TDBR" and name not in GETTERS:
            bad.append((kind, name))
    return bad


def functions(disassembly):
    """{function name: [(mnemonic, operands)]} from `objdump -d -C`."""
    out, current = {}, None
    for line in disassembly.splitlines():
        m = FUNC.match(line)
        if m:
            current = m.group(1)
            out.setdefault(current, [])
            continue
        m = INSN.match(line)
        if m and current is not None:
            out[current].append((m.group(1), m.group(2)))
    return out


def vex_outside_isa(funcs):
    bad = []
    for name, insns in funcs.items():
        if INTERNAL in name or name in GETTERS or LIBM_FMA.match(name):  # libm's fmaf picks its own ISA (ifunc)
            continue
        hit = next(((mn, op) for mn, op in insns if is_vex(mn, op)), None)
        if hit:
            bad.append(f"{name}: {hit[0]} {hit[1]}".strip())
    return bad


def fma_outside_contract(funcs):
    """FMA instructions outside the SIMD paths' internal functions and libm's fmaf."""
    return [f"{name}: {mn} {op}" for name, insns in funcs.items() for mn, op in insns
            if FMA.match(mn) and INTERNAL not in name and not LIBM_FMA.match(name)][:20]


def has_fma(disassembly):
    return any(FMA.match(mn) for insns in functions(disassembly).values() for mn, _ in insns)


def check(objects, binary, native):
    errors = []
    for obj in objects:
        base = obj.rsplit("/", 1)[-1]
        if base.startswith(("isa_avx2", "isa_avx512")):
            text = run(["objdump", "-d", obj])
            wide = "%zmm" in text
            if native != "ON" and (base.startswith("isa_avx512") != wide or "%ymm" not in text):
                errors.append(f"{base}: registers used do not match its path (zmm: {wide}): wrong flags?")
            if not has_fma(run(["objdump", "-d", "--no-show-raw-insn", obj])):
                errors.append(f"{base}: no fused multiply-add: numerics v2's lanes are vfmadd (-mfma, _mm*_fmadd_ps)")
            for kind, name in weak_or_global_symbols(run(["nm", "-C", "--defined-only", obj]).splitlines()):
                errors.append(f"{base}: defines {'weak' if kind in 'WVuvw' else 'global'} symbol {name} ({kind}): "
                              "SIMD TUs may export only their table getter")
        elif base.startswith("isa_scalar") and native != "ON":
            for bad in vex_outside_isa({k.replace(INTERNAL, ""): v for k, v in
                                        functions(run(["objdump", "-d", "-C", obj])).items()}):
                errors.append(f"{base}: the scalar path uses AVX: {bad}")
    if binary:
        funcs = functions(run(["objdump", "-d", "-C", "--no-show-raw-insn", binary]))
        if native != "ON":
            errors += [f"{binary}: baseline code uses AVX: {b}" for b in vex_outside_isa(funcs)[:20]]
        if native != "ON":
            errors += [f"{binary}: fused multiply-add outside the SIMD paths and libm fmaf: {b}"
                       for b in fma_outside_contract(funcs)]
    return errors


def prove():
    """Each check flags planted input (and passes clean input)."""
    ok = True
    nm = ["0000 T oracle::isa::avx2_kernels()", "0010 t oracle::isa::(anonymous namespace)::tile()",
          "0020 W std::vector<float, std::allocator<float> >::_M_default_append(unsigned long)",
          "0030 T oracle::isa::finish_lanes_f32(float*, float const*, float const*, int, int)"]
    got = [n for _, n in weak_or_global_symbols(nm)]
    ok &= got == [nm[2].split(None, 2)[2], nm[3].split(None, 2)[2]]
    dis = "\n".join(["0000 <oracle::ops::rmsnorm(float*)>:", "   0:\tmulss  %xmm1,%xmm0",
                     "0010 <oracle::isa::(anonymous namespace)::tile()>:", "  10:\tvaddps %ymm1,%ymm0,%ymm0",
                     "0020 <std::min<float>(float const&, float const&)>:", "  20:\tvmovss (%rdi),%xmm0",
                     "0030 <oracle::ops::dot_fused(float)>:", "  30:\tvfmadd231ps %ymm2,%ymm1,%ymm0",
                     "0040 <oracle::isa::(anonymous namespace)::tile_fma()>:", "  40:\tvfmadd231ps %zmm2,%zmm1,%zmm0",
                     "0050 <fmaf>:", "  50:\tvfmadd132ss %xmm1,%xmm2,%xmm0"])
    funcs = functions(dis)
    ok &= [b.split(": ")[0] for b in vex_outside_isa(funcs)] == ["std::min<float>(float const&, float const&)",
                                                                "oracle::ops::dot_fused(float)"]
    ok &= [b.split(": ")[0] for b in fma_outside_contract(funcs)] == ["oracle::ops::dot_fused(float)"]
    ok &= has_fma(dis) and not has_fma("\n".join(dis.splitlines()[:6]))
    print("isa_check --prove:", "every planted violation caught" if ok else "a planted violation was MISSED")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", nargs="*", default=[])
    ap.add_argument("--binary")
    ap.add_argument("--native", default="OFF")
    ap.add_argument("--prove", action="store_true")
    a = ap.parse_args()
    a.objects = [o for arg in a.objects for o in arg.split(";") if o]  # CTest passes a CMake list as one argument
    if a.prove:
        return prove()
    errors = check(a.objects, a.binary, a.native.upper())
    for e in errors:
        print(e)
    print(f"isa_check: {len(a.objects)} object(s){', ' + a.binary if a.binary else ''}: "
          f"{'OK' if not errors else str(len(errors)) + ' violation(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
