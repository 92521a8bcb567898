#!/usr/bin/env python3
"""Differential tokenizer fixtures (docs/testing.md, "Differential harnesses").

    tokenizer_diff.py write  --vocab-dir DIR --shared DIR --out reference/tests/data/tokdiff
    tokenizer_diff.py check  --vocab-dir DIR --shared DIR --out reference/tests/data/tokdiff

Generates adversarial inputs (seeded: the same inputs every run) and writes what the
implementations users trust make of them: llama.cpp's llama_tokenize (the peer's libllama,
through scripts/peer/llamacpp_tokenize.c, one process per vocabulary) for every
models/ggml-vocab-*.gguf of the llama-cpp-python 0.3.36 sdist plus SmolLM2, without and with
special-token parsing (add_special = parse_special = false / true), and llama.cpp's
end-of-generation set (llama_vocab_is_eog over every id); sentencepiece's encode on the
Llama 2 tokenizer.model. `check` regenerates into a temporary folder and diffs (exit 1 on a
difference, 77 when the peer is not built). test_tokenizer_differential reads the fixtures.

Fixture <name>.jsonl: line 1 a header (vocab file, its sha256, trusted implementation, bos,
eos, add_bos, add_eos, eog ids, generator); then one case per line: {"t": text, "g":
generator, "a": ids without special handling, "b": ids with add_special + parse_special,
left out when it is [bos if add_bos] + a + [eos if add_eos]}. Vocabularies llama.cpp loads
but the oracle refuses (tokenizer.ggml.model bert, t5, gemma4, ...) get a header only with
"refused": true. invalid_utf8.jsonl: byte strings that are not UTF-8 ({"x": hex}), which the
oracle refuses (docs/tokenizer.md) and are therefore not sent to llama.cpp.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unicodedata

SEED = 20261203
PEER = os.environ.get("PEER_DIR", "/work/peer")
SRC = PEER + "/llama_cpp_python-0.3.36/vendor/llama.cpp"
LIB = PEER + "/build/bin"
HERE = os.path.dirname(os.path.abspath(__file__))

# Vocabularies the oracle refuses (docs/tokenizer.md: tokenizer.ggml.model other than llama/gpt2
# — bert-bge, nomic-bert-moe: bert, gemma-4: gemma4 — or a gpt2 vocabulary without
# tokenizer.ggml.pre — aquila, gpt-neox — which llama.cpp maps to a "default" regex with a
# warning): only the refusal is checked.
REFUSED = {"bert-bge", "gemma-4", "nomic-bert-moe", "aquila", "gpt-neox"}


# ---- generators -----------------------------------------------------------------------------
def chars_by_category(lo=0x20, hi=0x30000):
    out = {}
    for cp in range(lo, hi):
        if not 0xD800 <= cp <= 0xDFFF:
            out.setdefault(unicodedata.category(chr(cp)), []).append(chr(cp))
    return out


CATS = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
        "Po", "Sm", "Sc", "Sk", "So", "Zs", "Cf"]
_ALL = chars_by_category()
BY_CAT = {c: _ALL[c] for c in CATS}
BY_CAT["Cc"] = [chr(c) for c in list(range(1, 32)) + [0x7F] + list(range(0x80, 0xA0))]
SPACES = [" ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2009", "\u202f", "\x0b", "\x0c",
          "\u2028", "\u0085", " \n", "\n ", "\t\n", "   \n\n  "]
WORDS = ["the", "The", "hello", "Hello", "world", "a", "I", "naïve", "café", "Zürich", "straße", "ΑΒΓ", "Ελλάδα",
         "Москва", "привет", "שלום", "مرحبا", "नमस्ते", "ภาษาไทย", "ភាសា", "中文", "日本語", "ひらがな", "カタカナ",
         "한국어", "ｆｕｌｌ", "🙂", "👍🏽", "👨‍👩‍👧", "🇩🇪", "❤️", "e\u0301", "ﬁ", "Ⅻ", "½", "x²", "co-op",
         "don't", "O'Neil", "http://x.y/z?q=1", "foo_bar", "camelCase", "__init__", "<div>", "#include",
         "a.b.c", "3.14", "1,000", "v2", "x86_64", "C++", "@user", "$100", "€5", "50%"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "’s",
                "’t"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["…", "—", "–", "«", "»", "“", "”", "‘", "’", "¿", "¡",
                                                       "。", "、", "！", "？", "·", "•"]
DIGITS = list("0123456789") + ["٠", "١", "٢", "۳", "४", "๕", "０", "９", "²", "³", "¼", "Ⅳ", "①"]


def gen_categories(rng):
    cats = rng.sample(list(BY_CAT), rng.randint(1, 3))
    n = rng.randint(1, 12)
    s = "".join(rng.choice(BY_CAT[rng.choice(cats)]) for _ in range(n))
    if rng.random() < 0.5:
        s = rng.choice(WORDS) + rng.choice(["", " "]) + s
    if rng.random() < 0.5:
        s = s + rng.choice(["", " "]) + rng.choice(WORDS)
    return s


def gen_boundaries(rng):
    """Valid text whose character boundaries are unusual: marks first, ZWJ/VS at the edges,
    lone regional indicators, scripts switching mid-word."""
    pieces = [rng.choice(BY_CAT["Mn"]), "\u200d", "\ufe0f", "\U0001F1E9", "\u0301", "\u200b", "\ufeff",
              rng.choice(BY_CAT["Me"]), rng.choice(BY_CAT["Mc"]), rng.choice(BY_CAT["Lo"]), rng.choice(WORDS)]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))


def gen_whitespace(rng):
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append("".join(rng.choice(SPACES) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.6:
            parts.append(rng.choice(WORDS))
    return "".join(parts)


def gen_punct(rng):
    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append("".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 6))))
        if rng.random() < 0.5:
            parts.append(rng.choice(WORDS + [" ", "  ", "\n"]))
    return "".join(parts)


def gen_digits(rng):
    parts = []
    for _ in range(rng.randint(1, 4)):
        parts.append("".join(rng.choice(DIGITS[:10] if rng.random() < 0.7 else DIGITS)
                             for _ in range(rng.randint(1, 14))))
        parts.append(rng.choice(["", " ", ".", ",", "-", "+", "e", "x", " - ", "\n", "a", "%"]))
    return "".join(parts)


def gen_contractions(rng):
    parts = []
    for _ in range(rng.randint(1, 4)):
        parts.append(rng.choice(WORDS[:8] + ["I", "we", "THEY", "it", "", " "]))
        parts.append(rng.choice(CONTRACTIONS) + rng.choice(["", "", "s", "t", " ", "'"]))
        parts.append(rng.choice(["", " ", "  ", "\n"]))
    return "".join(parts)


def gen_mixed(rng):
    parts = []
    for _ in range(rng.randint(1, 10)):
        r = rng.random()
        parts.append(rng.choice(WORDS) if r < 0.6 else rng.choice(SPACES) if r < 0.8 else rng.choice(PUNCT))
    return "".join(parts)


GENERATORS = [("categories", gen_categories, 260), ("boundaries", gen_boundaries, 120),
              ("whitespace", gen_whitespace, 160), ("punctuation", gen_punct, 140), ("digits", gen_digits, 120),
              ("contractions", gen_contractions, 120), ("mixed", gen_mixed, 140)]


def common_inputs():
    rng = random.Random(SEED)
    out = [("fixed", s) for s in ["", " ", "  ", "\n", "a", " a", "a ", "Hello world", " Hello world",
                                   "Hello World!", "\t\tx", "   leading", "trailing   ", "a\n\nb", "1234567890",
                                   "I'm don't we'll", "'s", " 's", "\u00a0x", "x\u00a0", "\u3000"]]
    for name, g, n in GENERATORS:
        out += [(name, g(rng)) for _ in range(n)]
    seen, uniq = set(), []
    for g, s in out:
        if s not in seen:
            seen.add(s)
            uniq.append((g, s))
    return uniq


def special_inputs(specials, rng):
    """Special-token texts: whole, every proper prefix, between words, adjacent, spaced."""
    out = []
    for t in specials[:40]:
        out.append(t)
        for k in range(1, len(t)):
            if rng.random() < min(1.0, 6.0 / len(t)):
                out.append(t[:k])
        out.append("Hello" + t + "world")
        out.append(" " + t + " ")
        out.append(t + "\n" + rng.choice(WORDS))
        out.append(t + t)
        out.append(t[:-1] + " " + t[-1:])
    for _ in range(60):
        ts = [rng.choice(specials) for _ in range(rng.randint(2, 4))]
        out.append(rng.choice(SPACES).join(ts) if rng.random() < 0.5 else rng.choice(WORDS).join(ts))
    return [("special", s) for s in out if s]


def invalid_utf8():
    rng = random.Random(SEED + 1)
    bad = [b"\x80", b"\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
           b"\xf0\x9f\x99", b"\xc3", b"\xfe\xff"]
    out = []
    for b in bad:
        out.append(b)
        for _ in range(4):
            w = rng.choice(WORDS).encode()
            out.append(w + b if rng.random() < 0.5 else b + w)
            cut = rng.choice(WORDS[13:30]).encode()  # multi-byte words cut mid-character
            out.append(cut[:rng.randint(1, len(cut) - 1)] if len(cut) > 1 else cut + b)
    return [x for x in dict.fromkeys(out) if not is_utf8(x)]


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# ---- llama.cpp ----------------------------------------------------------------------------------
def driver(work):
    exe = os.path.join(work, "llamacpp_tokenize")
    subprocess.run(["cc", "-O2", "-std=c11", "-I" + SRC + "/include", "-I" + SRC + "/ggml/include",
                    os.path.join(HERE, "peer", "llamacpp_tokenize.c"), "-L" + LIB, "-Wl,-rpath," + LIB, "-lllama",
                    "-lggml", "-lggml-base", "-o", exe], check=True)
    return exe


def peer_vocab(exe, path):
    p = subprocess.run([exe, path, "vocab"], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    lines = p.stdout.splitlines()
    n, bos, eos, add_bos, add_eos = map(int, lines[0].split())
    toks = []
    for line in lines[1:]:
        f = line.split(" ")
        toks.append((int(f[0]), int(f[1]), int(f[2]), bytes.fromhex(f[3]) if len(f) > 3 else b""))
    return dict(n=n, bos=bos, eos=eos, add_bos=bool(add_bos), add_eos=bool(add_eos), tokens=toks)


def peer_tokenize(exe, path, texts):
    inp = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    p = subprocess.run([exe, path, "tokenize"], input=inp, capture_output=True, text=True, check=True)
    rows = []
    for line in p.stdout.splitlines():
        a, b = line.split("|")
        rows.append(([int(x) for x in a.split()], [int(x) for x in b.split()]))
    assert len(rows) == len(texts), (path, len(rows), len(texts))
    return rows


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_vocab_fixture(exe, path, name, shared_rel, out_dir):
    v = peer_vocab(exe, path)
    header = dict(vocab=os.path.basename(path), sha256=sha256(path), trusted="llama.cpp llama_tokenize "
                  "(llama-cpp-python 0.3.36 sdist)", generator="scripts/tokenizer_diff.py seed %d" % SEED)
    if shared_rel:
        header["shared"] = shared_rel
    if v is None or name in REFUSED:
        header["refused"] = True
        lines = [header]
    else:
        ATTR_CONTROL, ATTR_USER = 1 << 3, 1 << 2
        specials = [t.decode("utf-8", "replace") for (_, attr, _, t) in v["tokens"]
                    if attr & (ATTR_CONTROL | ATTR_USER) and t and is_utf8(t)]
        rng = random.Random(SEED + len(name))
        cases = common_inputs() + special_inputs(specials, rng)
        rows = peer_tokenize(exe, path, [s for _, s in cases])
        header.update(n_vocab=v["n"], bos=v["bos"], eos=v["eos"], add_bos=v["add_bos"], add_eos=v["add_eos"],
                      eog=[i for (i, _, e, _) in v["tokens"] if e], cases=len(cases))
        lines = [header]
        for (g, s), (a, b) in zip(cases, rows):
            c = {"g": g, "t": s, "a": a}
            default = ([v["bos"]] if v["add_bos"] and v["bos"] >= 0 else []) + a + \
                      ([v["eos"]] if v["add_eos"] and v["eos"] >= 0 else [])
            if b != default:
                c["b"] = b
            lines.append(c)
    with open(os.path.join(out_dir, name + ".jsonl"), "w") as f:
        for x in lines:
            f.write(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n")
    return len(lines) - 1


def write_spm_fixture(model, out_dir):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model)
    cases = common_inputs()
    header = dict(vocab="llama2-tokenizer/tokenizer.model", sha256=sha256(model),
                  trusted="sentencepiece %s encode (no BOS)" % spm.__version__,
                  generator="scripts/tokenizer_diff.py seed %d" % SEED, cases=len(cases))
    with open(os.path.join(out_dir, "llama2-sentencepiece.jsonl"), "w") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        for g, s in cases:
            f.write(json.dumps({"g": g, "t": s, "a": sp.encode(s)}, ensure_ascii=False, separators=(",", ":")) + "\n")
    return len(cases)


def write_all(vocab_dir, shared, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp()
    try:
        exe = driver(work)
        for fn in sorted(os.listdir(vocab_dir)):
            if fn.startswith("ggml-vocab-") and fn.endswith(".gguf"):
                name = fn[len("ggml-vocab-"):-len(".gguf")]
                n = write_vocab_fixture(exe, os.path.join(vocab_dir, fn), name, None, out_dir)
                print("%-16s %5d cases" % (name, n))
        smol = "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        n = write_vocab_fixture(exe, os.path.join(shared, "models", smol), "smollm2", smol, out_dir)
        print("%-16s %5d cases" % ("smollm2", n))
    finally:
        shutil.rmtree(work)
    n = write_spm_fixture(os.path.join(shared, "models", "llama2-tokenizer", "tokenizer.model"), out_dir)
    print("%-16s %5d cases" % ("llama2-spm", n))
    with open(os.path.join(out_dir, "invalid_utf8.jsonl"), "w") as f:
        for b in invalid_utf8():
            f.write(json.dumps({"x": b.hex()}) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["write", "check"])
    ap.add_argument("--vocab-dir", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not os.path.exists(LIB + "/libllama.so"):
        print("tokenizer_diff: peer not built (%s/libllama.so); see scripts/build_peer.sh" % LIB, file=sys.stderr)
        sys.exit(77)
    if a.mode == "write":
        write_all(a.vocab_dir, a.shared, a.out)
        return
    tmp = tempfile.mkdtemp()
    try:
        write_all(a.vocab_dir, a.shared, tmp)
        diff = subprocess.run(["diff", "-r", "-q", a.out, tmp])
        if diff.returncode != 0:
            subprocess.run("diff -r '%s' '%s' | head -40" % (a.out, tmp), shell=True)
            sys.exit(1)
        print("tokenizer_diff: the committed fixtures equal a fresh run")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
