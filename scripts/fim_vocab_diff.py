#!/usr/bin/env python3
"""FIM-key fixtures (docs/testing.md "Differential harnesses"; issue 29).

    fim_vocab_diff.py write --shared DIR --out reference/tests/data/tokdiff_fim
    fim_vocab_diff.py check --shared DIR --out reference/tests/data/tokdiff_fim

Writes small vocabulary-only GGUFs (stories260K's 512-token SentencePiece vocabulary with its
last tokens re-texted and tokenizer.ggml.fim_*_token_id / prefix|suffix|middle_token_id keys
set adversarially: ids whose texts are in none of llama.cpp's lists, a key beside a token whose
text llama.cpp would otherwise pick, keys outside the vocabulary, the deprecated keys over the
new ones, a byte token as file separator, texts alone) and, for each, what llama.cpp makes of it
through the peer's libllama (scripts/peer/llamacpp_tokenize.c): the six FIM ids
(llama_vocab_fim_*), the end-of-generation set (llama_vocab_is_eog), every token's attribute,
and the tokenization of the re-texted tokens (plain and with special-token parsing, so a token
made control shows). `check` regenerates into a temporary folder and diffs (exit 77 without the
peer). test_tokenizer_differential "[fim]" reads the fixtures.
"""
import argparse
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

PEER = os.environ.get("PEER_DIR", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "peer"))
SRC = PEER + "/llama_cpp_python-0.3.36/vendor/llama.cpp"
LIB = PEER + "/build/bin"
HERE = os.path.dirname(os.path.abspath(__file__))
NORMAL, UNKNOWN, CONTROL, USER = 1, 2, 3, 4
U32_NONE = 4294967295

# name: (re-texted tokens {id: (text, type)}, keys {suffix of tokenizer.ggml.: id})
CASES = {
    "keys_unlisted_texts": ({500: ("<my_pre>", NORMAL), 501: ("<my_suf>", NORMAL), 502: ("<my_mid>", NORMAL),
                             503: ("<my_pad>", NORMAL), 504: ("<my_rep>", NORMAL), 505: ("<my_sep>", NORMAL)},
                            {"fim_pre_token_id": 500, "fim_suf_token_id": 501, "fim_mid_token_id": 502,
                             "fim_pad_token_id": 503, "fim_rep_token_id": 504, "fim_sep_token_id": 505}),
    "key_beside_listed_text": ({500: ("<PAD>", NORMAL), 501: ("<reponame>", NORMAL), 502: ("<my_pad>", USER),
                                503: ("<my_rep>", CONTROL), 504: ("<PRE>", NORMAL)},
                               {"fim_pad_token_id": 502, "fim_rep_token_id": 503, "fim_pre_token_id": 3}),
    "keys_out_of_range": ({500: ("<|fim_pad|>", NORMAL), 501: ("<|fim_repo|>", NORMAL), 502: ("<|file_sep|>", NORMAL),
                           503: ("<fim_prefix>", NORMAL)},
                          {"fim_pad_token_id": U32_NONE, "fim_rep_token_id": 512, "fim_sep_token_id": 100000,
                           "fim_pre_token_id": U32_NONE}),
    "deprecated_keys": ({500: ("<a_pre>", NORMAL), 501: ("<b_pre>", NORMAL), 502: ("<c_suf>", NORMAL),
                         503: ("<d_mid>", NORMAL), 504: ("<|fim_prefix|>", NORMAL)},
                        {"fim_pre_token_id": 500, "prefix_token_id": 501, "suffix_token_id": 502,
                         "middle_token_id": 503, "fim_suf_token_id": 504}),
    "deprecated_out_of_range": ({500: ("<a_pre>", NORMAL), 501: ("<fim-suffix>", NORMAL)},
                                {"fim_pre_token_id": 500, "prefix_token_id": U32_NONE, "suffix_token_id": 600}),
    "byte_token_separator": ({500: ("<|fim_pad|>", CONTROL)}, {"fim_sep_token_id": 13, "fim_pad_token_id": 500}),
    "texts_only": ({500: ("\u2581<PRE>", NORMAL), 501: ("\u2581<SUF>", NORMAL), 502: ("\u2581<MID>", NORMAL),
                    503: ("<fim-pad>", NORMAL), 504: ("<|repo_name|>", NORMAL), 505: ("<|file_sep|>", NORMAL)}, {}),
    "texts_deepseek_glm": ({500: ("<\uff5cfim\u2581begin\uff5c>", NORMAL), 501: ("<|code_suffix|>", NORMAL),
                            502: ("<|middle|>", NORMAL), 503: ("[PAD]", USER), 504: ("<REPO>", NORMAL)}, {}),
}


def gguf_module():
    sys.path.insert(0, SRC + "/gguf-py")
    import gguf
    return gguf


def write_vocab(gguf, base, path, retext, keys):
    r = gguf.GGUFReader(base)
    tokens = list(r.fields["tokenizer.ggml.tokens"].contents())
    scores = list(r.fields["tokenizer.ggml.scores"].contents())
    types = list(r.fields["tokenizer.ggml.token_type"].contents())
    for i, (text, typ) in retext.items():
        tokens[i], types[i], scores[i] = text, typ, 0.0
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("fim-vocab-" + os.path.basename(path)[:-5])
    for k in ("context_length", "embedding_length", "feed_forward_length", "block_count"):
        w.add_uint32("llama." + k, int(r.fields["llama." + k].contents()))
    w.add_uint32("llama.attention.head_count", 8)
    w.add_uint32("llama.attention.head_count_kv", 4)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    for k, v in keys.items():
        w.add_uint32("tokenizer.ggml." + k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def driver(work):
    exe = os.path.join(work, "llamacpp_tokenize")
    subprocess.run(["cc", "-O2", "-std=c11", "-I" + SRC + "/include", "-I" + SRC + "/ggml/include",
                    os.path.join(HERE, "peer", "llamacpp_tokenize.c"), "-L" + LIB, "-Wl,-rpath," + LIB, "-lllama",
                    "-lggml", "-lggml-base", "-o", exe], check=True)
    return exe


def run(exe, path, mode, inp=None):
    return subprocess.run([exe, path, mode], input=inp, capture_output=True, text=True, check=True).stdout


def write_vocabs(shared, out):
    """The 8 vocabulary-only GGUFs alone (no peer needed): the default suite's test makes them in
    the build tree; their SHA-256 is in the committed .json next to llama.cpp's answers."""
    gguf = gguf_module()
    base = os.path.join(shared, "models", "gguf", "stories260K.gguf")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=out)  # written beside, then renamed: never a half-written file
    try:
        for name, (retext, keys) in CASES.items():
            write_vocab(gguf, base, os.path.join(tmp, name + ".gguf"), retext, keys)
            os.replace(os.path.join(tmp, name + ".gguf"), os.path.join(out, name + ".gguf"))
    finally:
        shutil.rmtree(tmp)


def write_all(shared, out):
    gguf = gguf_module()
    base = os.path.join(shared, "models", "gguf", "stories260K.gguf")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    try:
        exe = driver(work)
        for name, (retext, keys) in CASES.items():
            path = os.path.join(out, name + ".gguf")
            write_vocab(gguf, base, path, retext, keys)
            lines = run(exe, path, "vocab").splitlines()
            attrs, eog = {}, []
            for line in lines[1:]:
                f = line.split(" ")
                if int(f[2]):
                    eog.append(int(f[0]))
                attrs[int(f[0])] = int(f[1])
            fim = [int(x) for x in run(exe, path, "fim").split()]
            ids = sorted(set(retext) | {i for i in fim if i >= 0})
            texts = [retext[i][0] for i in sorted(retext)]
            cases = texts + ["a" + t + "b" for t in texts] + [" " + t + " " for t in texts] + ["".join(texts)]
            rows = []
            for line, t in zip(run(exe, path, "tokenize", "".join(t.encode().hex() + "\n" for t in cases)).splitlines(),
                               cases):
                a, b = line.split("|")
                rows.append({"t": t, "a": [int(x) for x in a.split()], "b": [int(x) for x in b.split()]})
            h = hashlib.sha256(open(path, "rb").read()).hexdigest()
            fixture = {"vocab": name + ".gguf", "sha256": h, "keys": keys,
                       "trusted": "llama.cpp 0c1e570 (llama-cpp-python 0.3.36 sdist): llama_vocab_fim_*, "
                                  "llama_vocab_is_eog, llama_vocab_get_attr, llama_tokenize",
                       "fim": fim, "eog": eog, "attr": {str(i): attrs[i] for i in ids}, "cases": rows}
            with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
                json.dump(fixture, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print("%-26s fim %s eog %s" % (name, fim, eog))
    finally:
        shutil.rmtree(work)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["write", "check", "vocabs"])
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.mode == "vocabs":
        write_vocabs(a.shared, a.out)
        return
    if not os.path.exists(os.path.join(LIB, "libllama.so")):
        print("no peer libllama in %s (scripts/build_peer.sh; PEER_DIR)" % LIB)
        sys.exit(77)
    if a.mode == "write":
        write_all(a.shared, a.out)
        return
    tmp = tempfile.mkdtemp()
    try:
        write_all(a.shared, tmp)
        bad = [f for f in sorted(os.listdir(tmp)) if f.endswith(".json") and not filecmp.cmp(os.path.join(tmp, f), os.path.join(a.out, f),
                                                                      shallow=False)]
        if bad:
            print("differ from the committed fixtures: " + " ".join(bad))
            sys.exit(1)
        print("fixtures agree")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
