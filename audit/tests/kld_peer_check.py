#!/usr/bin/env python3
"""Compares the statistics block of an `oracle certify` certificate.md with llama-perplexity's
printout (audit/tests/data/kldpeer, README.md there), field by field as printed.

  kld_peer_check.py files   PRINTOUT CERTIFICATE.md CANDIDATE.kld[.gz] REFERENCE.kld[.gz]
      both sides are llama.cpp's logits (its base file of the reference as reference, its base
      file of the candidate as candidate): the fields of the reference alone (PPL(base) ±) equal
      to the last printed digit; every other field within the bound the candidate file's uint16
      levels allow (derived below), plus half a unit of the printed digit.
  kld_peer_check.py sigma K PRINTOUT CERTIFICATE.md [exact-base]
      our logits on one side: every field printed with a ± within K of llama.cpp's ±, and each
      ± within a quarter of llama.cpp's (and PPL(base) to its printed digits with exact-base:
      the reference is llama.cpp's file).

The bound of `files`. llama-perplexity scores the candidate's float logits live; the candidate's
base file holds the same logits' log-softmax rounded to levels of s = range/65535 (range <= 16
nats): every ln q above the file's 16-nat floor is off by at most e = s/2 (+1e-5 for the float
arithmetic of both sides), and a ln q below the floor only moves up, where q < e^-16. Hence, with
e the largest half-level of the file and n the scored tokens:
  ln PPL(Q), ln ratio (mean of nll_q - nll_base): |d| <= e;  PPL(Q), ratio, difference: relative
  e^e - 1 (difference: PPL(Q)(e^e - 1));  
  the ± of each: a standard error is the centred RMS over sqrt(n - 1), which moves by at most
  e / sqrt(n - 1) when every value moves by at most e; scaled as its field;
  KLD of a token: sum_k p_base (ln p_base - ln q) moves by at most e (p_base sums to <= 1), plus,
  for the k at the candidate's floor that enter the sum (ln p_base > -16), their base mass M_t
  (read from both files) times the live ln q's depth below the floor, taken as at most 16 nats
  (an assumption: the file does not say; the window is 16 nats wide): B_t = e + 16 M_t; the mean
  within mean(B_t), its ± within RMS(B_t) / sqrt(n - 1), every percentile within max(B_t)
  (sorting is 1-Lipschitz in the max norm);
  Δp = q - p_base moves by at most q(e^e - 1) <= e^e - 1 (×100 in percent); RMS Δp by as much
  (a norm); its ± (0.5/rms times the se of Δp²) is held to the same, a tolerance, not derived;
  same top: at most the tokens whose candidate top-2 margin in the file is <= 2e change (the
  count T is read from the file), so |d| <= 100 T / n percent (± accordingly);
  Cor(ln PPL): printed to 0.01 %; bounded by the perturbation of the nll vector relative to its
  spread: 100 (2 e / sd_q) percent.
"""
import gzip
import math
import re
import struct
import sys

import numpy as np


def parse(text):
    fields = {}
    for line in text.splitlines():
        m = re.match(r"^(.*?)\s*:\s*(.*)$", line)
        if not m or "=" in line[:8] or line.startswith("#"):
            continue
        label = " ".join(m.group(1).split())
        nums = re.findall(r"-?\d+\.\d+", m.group(2))
        if not nums:
            continue
        fields[label] = [(float(x), len(x.split(".")[1])) for x in nums]
    return fields


def certificate_block(path):
    text = open(path, encoding="utf-8").read()
    at = text.index("## llama-perplexity statistics")
    start = text.index("```text\n", at) + len("```text\n")
    return text[start:text.index("```", start)]


def read_kld(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", raw, 8)
    tokens = np.frombuffer(raw, dtype="<i4", count=n_ctx * n_chunk, offset=20).reshape(n_chunk, n_ctx)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    recs = np.frombuffer(raw, dtype="<u2", offset=20 + 4 * n_ctx * n_chunk).reshape(-1, nv)
    head = recs[:, :4].copy().view("<f4")  # (records, 2): scale, min_log_prob
    levels = recs[:, 4:4 + n_vocab].astype(np.float64)
    return n_ctx, n_chunk, tokens, head[:, 0].astype(np.float64), head[:, 1].astype(np.float64), levels


def files_bounds(kld_path, ref_path, theirs):
    """Per-field tolerances (absolute, in the printed unit) for the `files` comparison."""
    _, _, _, scale, minlp, levels = read_kld(kld_path)
    _, _, _, rscale, rmin, rlevels = read_kld(ref_path)
    n = len(scale)
    e = float(scale.max()) / 2 + 1e-5
    top2 = np.sort(levels, axis=1)[:, -2:]
    ties = int(np.sum((top2[:, 1] - top2[:, 0]) * scale[:, None].ravel() <= 2 * e))
    lb = rscale[:, None] * rlevels + rmin[:, None]
    mass = np.sum(np.where((levels == 0) & (lb > -16), np.exp(lb), 0.0), axis=1)  # (n) per token
    kld_b = e + 16 * mass  # per token: a live ln q at most 16 nats below the floor
    kld_e, kld_se = float(kld_b.mean()), float(np.sqrt(np.mean(kld_b ** 2)) / math.sqrt(n - 1))
    kld_max = float(kld_b.max())
    rel = math.expm1(e)
    se_d = e / math.sqrt(n - 1)  # a standard error moves by at most this (centred RMS, 1-Lipschitz)
    ppl_q, ppl_q_se = (v for v, _ in theirs["Mean PPL(Q)"])
    ratio, ratio_se = (v for v, _ in theirs["Mean PPL(Q)/PPL(base)"])
    sd_q = ppl_q_se / ppl_q * math.sqrt(n - 1)  # sd of nll_q
    ppl_se_b = ppl_q * rel * (ppl_q_se / ppl_q) + ppl_q * (1 + rel) * se_d
    b = {
        "Mean PPL(Q)": [ppl_q * rel, ppl_se_b],
        "Mean PPL(base)": [0.0, 0.0],
        "Cor(ln(PPL(Q)), ln(PPL(base)))": [100 * 2 * e / sd_q if sd_q > 0 else 100.0],
        "Mean ln(PPL(Q)/PPL(base))": [e, se_d],
        "Mean PPL(Q)/PPL(base)": [ratio * rel, ratio * rel * (ratio_se / ratio) + ratio * (1 + rel) * se_d],
        "Mean PPL(Q)-PPL(base)": [ppl_q * rel, ppl_se_b],
        "Mean KLD": [kld_e, kld_se],
        "Mean Δp": [100 * rel, 100 * rel / math.sqrt(n - 1)],
        "RMS Δp": [100 * rel, 100 * rel],
        "Same top p": [100 * ties / n, 100 * math.sqrt(ties / n / (n - 1))],
    }
    for label in theirs:
        if label not in b:  # percentiles, maximum, minimum
            b[label] = [100 * rel if "Δp" in label else kld_max]
    return b, e, ties, n


def compare(ours, theirs, tol, report):
    bad = []
    for label, want in theirs.items():
        got = ours.get(label)
        if got is None or len(got) != len(want):
            bad.append(f"{label}: missing or malformed in ours ({got})")
            continue
        for i, ((w, dw), (g, dg)) in enumerate(zip(want, got)):
            half = 0.5 * 10 ** -dw + 0.5 * 10 ** -dg
            t = tol(label, i) + half + 1e-12
            units = abs(g - w) * 10 ** dw
            report.append(f"{label}{' ±' if i else ''}: ours {g:.{dg}f} llama.cpp {w:.{dw}f} "
                          f"(|d| = {units:.0f} units of the last digit, allowed {t * 10 ** dw:.1f})")
            if abs(g - w) > t:
                bad.append(report[-1])
    return bad


def main():
    mode = sys.argv[1]
    if mode == "files":
        printout, cert, kld, ref = sys.argv[2:6]
        theirs = parse(open(printout, encoding="utf-8").read())
        ours = parse(certificate_block(cert))
        bounds, e, ties, n = files_bounds(kld, ref, theirs)
        report = [f"# {printout}: n = {n}, e = {e:.3g}, candidate near-ties {ties}"]
        bad = compare(ours, theirs, lambda label, i: bounds[label][i], report)
    elif mode == "sigma":
        k = float(sys.argv[2])
        printout, cert = sys.argv[3:5]
        exact_base = len(sys.argv) > 5 and sys.argv[5] == "exact-base"
        theirs = parse(open(printout, encoding="utf-8").read())
        ours = parse(certificate_block(cert))
        theirs = {l: v for l, v in theirs.items() if len(v) == 2 and (exact_base or l != "Mean PPL(base)")}
        report = [f"# {printout}: within {k} of llama.cpp's ±"]

        def tol(label, i):
            if label == "Mean PPL(base)" and exact_base:
                return 0.0
            return k * theirs[label][1][0] if i == 0 else 0.25 * theirs[label][1][0]  # the ± itself: within a quarter
        bad = compare(ours, theirs, tol, report)
    else:
        sys.exit(f"unknown mode {mode}")
    print("\n".join(report))
    if bad:
        print("FAILED:\n" + "\n".join(bad))
        sys.exit(1)


if __name__ == "__main__":
    main()
