#!/usr/bin/env python3
"""Generates the bad-input corpus (docs/testing.md, "Bad-input corpus").

    make_corpus.py --oracle BIN --shared DIR --repo DIR --out DIR

Writes every case's input files under OUT and OUT/cases.json: one entry per
case with the `oracle` arguments and what must happen (exit code, one stderr
line naming file and field, no signal, a time bound, nothing written). The
inputs are derived from the real fixtures in ../shared/models (patched in
place at a field this script locates by parsing the file) and from files a
valid `oracle` run writes first (a replay log, a synthetic GGUF). Python
stdlib only; run_corpus.py executes the cases.
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_edit import Gguf, patch  # noqa: E402

CASES = []


def case(cid, klass, argv, file, field, **kw):
    """One case: `oracle argv...` must exit kw.get('exit', 2) with one stderr line
    containing `file` and matching the regex `field` (case-insensitive)."""
    c = dict(id=cid, klass=klass, argv=argv, file=file, field=field)
    c.update(kw)
    CASES.append(c)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------------------------------------
# Defect classes of issue 15
# ---------------------------------------------------------------------------------------------
def crash_cases(o, M, golden_line):
    """1. Crashes: golden records with output_ids shorter than logits_sha256, certify
    --greedy-steps -1, thread creation failing under a memory limit."""
    for name, ids in [("empty", []), ("short", None)]:
        r = json.loads(golden_line)
        r["output_ids"] = ids if ids is not None else r["output_ids"][:3]
        d = os.path.join(o, "crash", "golden_" + name)
        write(os.path.join(d, "stories260K.jsonl"), json.dumps(r) + "\n")
        case("crash/golden_output_ids_" + name, "crash", ["golden", "verify", d],
             os.path.join(d, "stories260K.jsonl") + ":1", "output_ids")
    g = M + "/gguf/stories260K.gguf"
    corpus = M + "/../corpus/stories260K-samples.txt"
    for opt, val in [("--greedy-steps", "-1"), ("--greedy-steps", "0")]:
        case("crash/certify%s_%s" % (opt, val), "crash",
             ["certify", "--reference", g, "--candidate", g, "--corpus", corpus, opt, val],
             "command line", opt)
    case("crash/threads_1000_ulimit", "crash", ["run", "--threads", "1000", "-n", "2"],
         "--threads", "threads", ulimit_v_kb=1500000)
    case("crash/replay_jobs_256_ulimit", "crash", ["replay", o + "/setup/log.jsonl", "--jobs", "256"],
         "--jobs", "jobs", ulimit_v_kb=1500000, exit=2)


def hang_cases(o, M):
    """2. Hangs: a FIFO (or a directory / a device) as any input; a FIFO as an output."""
    fifo = os.path.join(o, "hang", "fifo")
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    bin_ = M + "/stories260K/stories260K.bin"
    g = M + "/gguf/stories260K.gguf"
    corpus = M + "/../corpus/stories260K-samples.txt"
    inputs = [
        ("run_model", ["run", "--model", "{X}"]),
        ("run_model_gguf_name", ["run", "--model", "{X}"]),
        ("run_tokenizer", ["run", "--model", bin_, "--tokenizer", "{X}"]),
        ("bench_model", ["bench", "--model", "{X}", "--prompt-tokens", "4", "--decode-tokens", "4"]),
        ("run_draft_model", ["run", "--model", g, "--draft-model", "{X}"]),
        ("quantize_in", ["quantize", "{X}", o + "/hang/q.gguf", "--type", "Q8_0"]),
        ("replay_log", ["replay", "{X}"]),
        ("certify_corpus", ["certify", "--reference", g, "--candidate", g, "--corpus", "{X}",
                            "--out", o + "/hang/cert"]),
        ("certify_thresholds", ["certify", "--reference", g, "--candidate", g, "--corpus", corpus,
                                "--thresholds", "{X}", "--out", o + "/hang/cert"]),
        ("synth_tokenizer", ["synth", "--tokenizer", "{X}", "-o", o + "/hang/s.gguf"]),
    ]
    kinds = [("fifo", fifo, "FIFO"), ("dir", os.path.join(o, "hang"), "directory"),
             ("chardev", "/dev/zero", "character device")]
    for kname, path, what in kinds:
        for iname, argv in inputs:
            if iname == "run_model_gguf_name":
                if kname != "fifo":
                    continue
                p = os.path.join(o, "hang", "fifo.gguf")
                if not os.path.exists(p):
                    os.mkfifo(p)
                path_i = p
            else:
                path_i = path
            if kname == "dir" and iname in ("run_model", "bench_model", "run_draft_model"):
                continue  # a directory is a safetensors model: covered by the safetensors cases
            case("hang/%s_%s" % (kname, iname), "hang", [a.replace("{X}", path_i) for a in argv],
                 path_i, what, timeout=30)
    # golden verify over a directory holding a FIFO named *.jsonl
    gd = os.path.join(o, "hang", "golden_fifo")
    os.makedirs(gd, exist_ok=True)
    if not os.path.exists(gd + "/x.jsonl"):
        os.mkfifo(gd + "/x.jsonl")
    case("hang/fifo_golden_record", "hang", ["golden", "verify", gd], gd + "/x.jsonl", "FIFO", timeout=30)
    # outputs: a FIFO or a device as the target is refused, never opened
    for oname, argv in [("synth_out", ["synth", "-o", fifo]),
                        ("synth_out_devfull", ["synth", "-o", "/dev/full"]),
                        ("run_log", ["run", "-n", "2", "--log", fifo]),
                        ("replay_json", ["replay", o + "/setup/log.jsonl", "--json", fifo])]:
        target = "/dev/full" if "devfull" in oname else fifo
        case("hang/output_" + oname, "hang", argv, target, "FIFO|device", timeout=30)


def overflow_cases(o, M, log_lines, golden_line):
    """3. Integer overflow: counts past int, seeds past uint64, JSON integers past 2^31."""
    bin_ = M + "/stories260K/stories260K.bin"
    case("overflow/bench_prompt_tokens", "overflow",
         ["bench", "--model", bin_, "--prompt-tokens", "2147483600", "--decode-tokens", "100"],
         "command line", "--prompt-tokens")
    case("overflow/bench_sum_past_context", "overflow",
         ["bench", "--model", bin_, "--prompt-tokens", "16777216", "--decode-tokens", "16777216"],
         bin_, "context_length")
    for v in ["18446744073709551616", "99999999999999999999999", "-1", "1e3", "0x10", " 5", "5 "]:
        case("overflow/run_seed_%s" % v.replace(" ", "_"), "overflow",
             ["run", "--seed", v, "-n", "2"], "command line", "--seed")
        case("overflow/synth_seed_%s" % v.replace(" ", "_"), "overflow",
             ["synth", "--seed", v, "-o", o + "/overflow/s.gguf"], "command line", "--seed")
    for opt in ["--max-tokens", "--top-k", "--context", "--threads", "--logprobs", "--kv-block"]:
        case("overflow/run%s_2p31" % opt, "overflow", ["run", opt, "2147483648"], "command line", opt)
    # replay: record 2 of a valid log with max_tokens / an id / seq_id past 2^31
    for name, path, value in [("max_tokens", ("stop", "max_tokens"), 4294967302),
                              ("output_id", ("output_ids", 0), 4294967296 + 5),
                              ("context", ("model", "context"), 2 ** 32 + 512),
                              ("seq_id", ("seq_id",), 2 ** 32),
                              ("seed", ("sampler", "seed"), -1)]:
        r = json.loads(log_lines[0])
        at = r
        for k in path[:-1]:
            at = at[k]
        at[path[-1]] = value
        p = write(os.path.join(o, "overflow", "replay_%s.jsonl" % name), log_lines[0] + json.dumps(r) + "\n")
        case("overflow/replay_" + name, "overflow", ["replay", p, "--quiet"], None, None, exit=1, stderr_lines=0,
             stdout_re=r"replay_%s\.jsonl:2: %s" % (name, "\\.".join(str(k) for k in path if not isinstance(k, int))))
    # a number past the double range (found by fuzz_replay_log_parser): that record is ERROR, named in our words
    p = write(os.path.join(o, "overflow", "replay_number_1e999.jsonl"),
              log_lines[0] + log_lines[0].replace('"max_tokens":', '"max_tokens":1e999,"x":', 1) + "\n")
    case("overflow/replay_number_1e999", "overflow", ["replay", p, "--quiet"], None, None, exit=1, stderr_lines=0,
         stdout_re=r"replay_number_1e999\.jsonl:2: .*out of range", forbid="json.exception")
    for name, field, value in [("max_tokens", "max_tokens", 4294967302), ("max_tokens_neg", "max_tokens", -1)]:
        r = json.loads(golden_line)
        r[field] = value
        d = os.path.join(o, "overflow", "golden_" + name)
        write(d + "/stories260K.jsonl", json.dumps(r) + "\n")
        case("overflow/golden_" + name, "overflow", ["golden", "verify", d], d + "/stories260K.jsonl:1", field)


def gguf_patch_cases(o, M):
    """4. Silent wrong answers in GGUF: overlap, block_count, epsilon, NaN weights/scales."""
    src = M + "/gguf/stories260K.gguf"
    data = open(src, "rb").read()
    g = Gguf(data)
    d = os.path.join(o, "silent")

    def gcase(cid, blob, field, cmd="bench"):
        p = write(os.path.join(d, cid + ".gguf"), blob)
        argv = (["bench", "--model", p, "--prompt-tokens", "4", "--decode-tokens", "4"] if cmd == "bench"
                else ["run", "--model", p, "-n", "4"])
        case("silent/" + cid, "silent", argv, p, field, json=True)

    # overlapping tensors: attn_k starts where attn_q starts
    q, k = g.tensors["blk.0.attn_q.weight"], g.tensors["blk.0.attn_k.weight"]
    gcase("overlap_k_on_q", patch(data, k["offset_at"], struct.pack("<Q", q["offset"])), "offset.*|overlap")
    last = g.order[-1]
    gcase("overlap_last_on_first",
          patch(data, g.tensors[last]["offset_at"], struct.pack("<Q", g.tensors[g.order[0]]["offset"])),
          "overlap")
    # block_count smaller (and larger) than the layers present
    t, v, at, _ = g.kv["llama.block_count"]
    fmt = "<" + {4: "I", 5: "i", 10: "Q", 11: "q"}[t]
    for n in [v - 1, 1]:
        gcase("block_count_%d_of_%d" % (n, v), patch(data, at, struct.pack(fmt, n)), "block_count", cmd="run")
    gcase("block_count_%d_of_%d" % (v + 1, v), patch(data, at, struct.pack(fmt, v + 1)), "block_count")  # checked before any layer is read
    # rms epsilon / rope base: +inf, -inf, NaN, 0, negative
    for key, short in [("llama.attention.layer_norm_rms_epsilon", "eps"), ("llama.rope.freq_base", "rope")]:
        if key not in g.kv:
            continue
        t, v, at, _ = g.kv[key]
        assert t == 6, key
        for name, x in [("inf", math.inf), ("neginf", -math.inf), ("nan", math.nan), ("zero", 0.0), ("neg", -1e-5)]:
            gcase("%s_%s" % (short, name), patch(data, at, struct.pack("<f", x)), key.replace(".", "\\."), cmd="run")
    # NaN / inf in F32 weights: a row of token_embd (the tied classifier), a norm, a matrix
    for tname, elem in [("token_embd.weight", 64 * 7), ("output_norm.weight", 3), ("blk.4.ffn_down.weight", 100)]:
        for name, x in [("nan", math.nan), ("inf", math.inf)]:
            blob = patch(data, g.tensor_at(tname) + 4 * elem, struct.pack("<f", x))
            gcase("f32_%s_%s" % (tname.replace(".", "_"), name), blob, "tensor '%s'" % tname.replace(".", "\\."),
                  cmd="run")
    # F16 file: an inf element
    f16 = M + "/gguf/stories260K-f16.gguf"
    data16 = open(f16, "rb").read()
    g16 = Gguf(data16)
    name16 = next(n for n in g16.order if g16.tensors[n]["type"] == 1)
    gcase("f16_inf_" + name16.replace(".", "_"), patch(data16, g16.tensor_at(name16) + 2 * 5, b"\x00\x7c"),
          "tensor '%s'" % name16.replace(".", "\\."), cmd="run")
    # Q8_0 / Q4_0 block scales NaN / inf (llama.cpp-quantized llama2xs)
    for qf, qtype in [("llama2xs-q8_0.gguf", 8), ("llama2xs-q4_0.gguf", 2)]:
        qd = open(M + "/gguf/" + qf, "rb").read()
        qg = Gguf(qd)
        qname = next(n for n in qg.order if qg.tensors[n]["type"] == qtype)
        elems, size = {8: (32, 34), 2: (32, 18)}[qtype]
        for name, bits in [("nan", b"\x00\x7e"), ("inf", b"\x00\x7c")]:
            blob = patch(qd, qg.tensor_at(qname) + 3 * size, bits)  # block 3's scale d
            gcase("%s_scale_%s" % (qf.split("-")[1].split(".")[0], name), blob,
                  "tensor '%s'.*block 3" % qname.replace(".", "\\."), cmd="run")
    # wrong magic in a .gguf name, and GGUF magic checked before llama2.c
    for name, magic in [("ggux", b"GGUX"), ("fugg", b"FUGG"), ("zero", b"\x00\x00\x00\x00")]:
        gcase("magic_" + name, patch(data, 0, magic), "magic", cmd="run")
    p = write(os.path.join(d, "magic_ggux_as.bin"), patch(data, 0, b"GGUX"))
    case("silent/magic_ggux_bin_name", "silent", ["run", "--model", p, "-n", "2"], p, "magic|header")
    # a GGUF with a .bin name is still a GGUF (valid: runs)
    p = write(os.path.join(d, "gguf_named.bin"), data)
    case("valid/gguf_named_bin", "valid", ["run", "--model", p, "-n", "2", "--quiet"], None, None, exit=0,
         stderr_lines=0)
    # a GGUF vocabulary passed as a tokenizer without the .gguf suffix
    p = write(os.path.join(d, "vocab_named.tok"), data)
    case("valid/gguf_tokenizer_named_tok", "valid",
         ["run", "--model", M + "/stories260K/stories260K.bin", "--tokenizer", p, "-n", "2", "--quiet"], None, None,
         exit=0, stderr_lines=0)
    # raw bytes in an error: architecture value with an ANSI escape and a newline
    t, v, at, _ = g.kv["general.architecture"]
    gcase("ansi_architecture", patch(data, at + 8, b"\x1b[2J\n"), "general\\.architecture", cmd="run")


def bin_cases(o, M):
    """llama2.c checkpoints: NaN weights, wrong magic-looking headers."""
    src = M + "/stories260K/stories260K.bin"
    data = open(src, "rb").read()
    d = os.path.join(o, "silent")
    tok = M + "/stories260K/tok512.bin"
    for name, at, x in [("embedding_nan", 28 + 4 * 1000, math.nan), ("embedding_inf", 28 + 4 * 9, -math.inf),
                        ("last_weight_nan", len(data) - 4 - 4 * 64 * 256, math.nan)]:
        p = write(os.path.join(d, "bin_%s.bin" % name), patch(data, at, struct.pack("<f", x)))
        case("silent/bin_" + name, "silent", ["run", "--model", p, "--tokenizer", tok, "-n", "4"], p, "tensor '")


def safetensors_model(d, tweak=None, config_tweak=None, extra_layer=False):
    """A tiny Llama as config.json + model.safetensors (F32, 1 layer, dim 8, vocab 16)."""
    dim, hid, L, H, V = 8, 16, 1, 2, 16
    cfg = dict(model_type="llama", hidden_size=dim, intermediate_size=hid, num_hidden_layers=L,
               num_attention_heads=H, num_key_value_heads=H, vocab_size=V, max_position_embeddings=32,
               rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, hidden_act="silu")
    if config_tweak:
        config_tweak(cfg)
    shapes = {"model.embed_tokens.weight": [V, dim], "model.norm.weight": [dim]}
    for l in range(L + (1 if extra_layer else 0)):
        p = "model.layers.%d." % l
        shapes.update({p + "input_layernorm.weight": [dim], p + "post_attention_layernorm.weight": [dim],
                       p + "self_attn.q_proj.weight": [dim, dim], p + "self_attn.k_proj.weight": [dim, dim],
                       p + "self_attn.v_proj.weight": [dim, dim], p + "self_attn.o_proj.weight": [dim, dim],
                       p + "mlp.gate_proj.weight": [hid, dim], p + "mlp.up_proj.weight": [hid, dim],
                       p + "mlp.down_proj.weight": [dim, hid]})
    header, blobs, off = {}, [], 0
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        n = 1
        for s in shape:
            n *= s
        vals = [((i * 31 + j * 7) % 13 - 6) / 64.0 + (1.0 if name.endswith("norm.weight") else 0.0) for j in range(n)]
        blob = struct.pack("<%df" % n, *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    if tweak:
        tweak(header, blobs)
    text = json.dumps(header).encode()
    os.makedirs(d, exist_ok=True)
    write(d + "/config.json", json.dumps(cfg) if not isinstance(cfg, str) else cfg)
    write(d + "/model.safetensors", struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return d


def safetensors_cases(o):
    d = os.path.join(o, "safetensors")
    bench = ["bench", "--quiet", "--prompt-tokens", "2", "--decode-tokens", "2", "--model"]  # --quiet: no progress line
    case("valid/safetensors_tiny", "valid", bench + [safetensors_model(d + "/valid")], None, None, exit=0,
         stderr_lines=0)

    def wrap(header, blobs):  # begin wraps past 2^64 to point into the header
        t = header["model.norm.weight"]
        size = t["data_offsets"][1] - t["data_offsets"][0]
        b = 2 ** 64 - 400
        t["data_offsets"] = [b, b + size]

    p = safetensors_model(d + "/offset_wrap", wrap)
    case("silent/safetensors_offset_wrap", "silent", bench + [p], p + "/model.safetensors", "data_offsets")

    def past_end(header, blobs):
        t = header["model.norm.weight"]
        t["data_offsets"] = [10 ** 9, 10 ** 9 + 32]

    p = safetensors_model(d + "/offset_past_end", past_end)
    case("loader/safetensors_offset_past_end", "loader", bench + [p], p + "/model.safetensors", "data_offsets")
    p = safetensors_model(d + "/extra_layer", extra_layer=True)
    case("silent/safetensors_layers_beyond_num_hidden_layers", "silent", bench + [p], p + "/config.json",
         "num_hidden_layers")
    for name, key, val in [("model_type_number", "model_type", 5), ("tie_string", "tie_word_embeddings", "yes"),
                           ("hidden_size_string", "hidden_size", "8"), ("eps_string", "rms_norm_eps", "x"),
                           ("eps_huge", "rms_norm_eps", 1e300), ("eps_zero", "rms_norm_eps", 0),
                           ("heads_2p32", "num_attention_heads", 2 ** 32 + 2), ("vocab_neg", "vocab_size", -16),
                           ("hidden_act_list", "hidden_act", ["silu"])]:
        p = safetensors_model(d + "/cfg_" + name, config_tweak=lambda c, k=key, v=val: c.__setitem__(k, v))
        case("vague/config_" + name, "vague", bench + [p], p + "/config.json", key, forbid="json.exception")
    p = d + "/cfg_not_json"
    safetensors_model(p)
    write(p + "/config.json", '{"hidden_size": 8,,}')
    case("vague/config_not_json", "vague", bench + [p], p + "/config.json", "config.json",
         forbid="json.exception")


def files_cases(o, M):
    """5. Files lost or half-written: every output atomic (temp + rename)."""
    d = os.path.join(o, "files")
    os.makedirs(d, exist_ok=True)
    existing = d + "/existing.gguf"
    shutil.copy(o + "/setup/tiny.gguf", existing)
    for name, tok in [("dir", d), ("llama2_vocab_mismatch", M + "/llama2-tokenizer/tokenizer.bin"),
                      ("truncated", write(d + "/trunc_tok.bin", open(M + "/stories260K/tok512.bin", "rb").read()[:999])),
                      ("missing", d + "/nope.bin")]:
        case("files/synth_existing_bad_tokenizer_" + name, "files",
             ["synth", "-o", existing, "--tokenizer", tok], tok, ".", unchanged=[existing])
    # write failures: RLIMIT_FSIZE (EFBIG) stands in for a full disk; SIGXFSZ is ignored
    case("files/synth_disk_full_new", "files", ["synth", "-o", d + "/full.gguf"], d + "/full.gguf",
         "file|output", fsize_bytes=65536)
    case("files/synth_disk_full_existing", "files", ["synth", "-o", existing], existing, "file|output",
         fsize_bytes=65536, unchanged=[existing])
    q_existing = d + "/q8.gguf"
    shutil.copy(o + "/setup/tiny.gguf", q_existing)
    case("files/quantize_disk_full", "files", ["quantize", M + "/gguf/llama2xs.gguf", q_existing, "--type", "Q8_0"],
         q_existing, "file", fsize_bytes=200000, unchanged=[q_existing])
    case("files/synth_missing_dir", "files", ["synth", "-o", d + "/no/such/dir/x.gguf"], d + "/no/such/dir/x.gguf",
         "output|file")
    case("files/golden_update_missing_dir", "files", ["golden", "update", d + "/no_such_dir"],
         d + "/no_such_dir", "DIR")
    case("files/golden_update_dev_full", "files", ["golden", "update", "/dev/full"], "/dev/full", "DIR")
    # --log to an unwritable path: refused before generating (nothing streamed to stdout)
    case("files/run_log_missing_dir", "files", ["run", "-n", "8", "--log", d + "/no/such/log.jsonl"],
         d + "/no/such/log.jsonl", "--log", stdout_empty=True)
    case("files/replay_json_missing_dir", "files", ["replay", o + "/setup/log.jsonl", "--report", d + "/no/r.json"],
         d + "/no/r.json", "--report")
    case("files/certify_out_is_file", "files",
         ["certify", "--reference", M + "/gguf/stories260K.gguf", "--candidate", M + "/gguf/stories260K.gguf",
          "--corpus", M + "/../corpus/stories260K-samples.txt", "--ctx", "64", "--max-chunks", "1",
          "--greedy-prompts", "1", "--greedy-steps", "2", "--out", existing], existing, "output",
         unchanged=[existing], timeout=120)


def memory_cases(o, M):
    """6. Memory: admission control of the KV cache and the activations (past the trained context
    only with --allow-context-extension; without it the context refusal comes first)."""
    bin_ = M + "/stories260K/stories260K.bin"
    ext = "--allow-context-extension"
    # The contiguous cache is sized by the request (prompt + max tokens), so the
    # request must ask for the positions; a short run in a huge context is fine.
    for ctx in ["16777216", "8388608"]:
        n = str(int(ctx) - 64)
        case("memory/run_context_" + ctx, "memory", ["run", "--model", bin_, "--context", ctx, ext, "-n", n],
             "kv_cache", "context_length.*needs [0-9]+ bytes.*available", ulimit_v_kb=2000000, json=True)
        case("memory/bench_context_" + ctx, "memory",
             ["bench", "--model", bin_, "--context", ctx, ext, "--prompt-tokens", "4", "--decode-tokens", n],
             "kv_cache", "context_length", ulimit_v_kb=2000000)
    case("valid/run_short_request_huge_context", "valid",
         ["run", "--model", bin_, "--context", "16777216", ext, "-n", "2", "--quiet"], None, None, exit=0,
         stderr_lines=0, ulimit_v_kb=2000000)
    case("memory/run_paged_context", "memory",
         ["run", "--model", bin_, "--context", "16777216", ext, "--kv", "paged", "-n", "2"], "kv_cache", "context_length",
         ulimit_v_kb=2000000)


def message_cases(o, M):
    """7. Vague messages: CLI11 errors in our one-line format, escaped bytes."""
    bin_ = M + "/stories260K/stories260K.bin"
    g = M + "/gguf/stories260K.gguf"
    corpus = M + "/../corpus/stories260K-samples.txt"
    case("vague/context_neg", "vague", ["run", "--context", "-1"], "command line", "--context", forbid="1\\.79769")
    case("vague/prefill_chunk_neg", "vague", ["run", "--prefill-chunk", "-1"], "command line", "--prefill-chunk")
    case("vague/unknown_subcommand", "vague", ["frobnicate"], "command line", "subcommand.*frobnicate",
         forbid="A subcommand is required")
    case("vague/no_subcommand", "vague", [], "command line", "subcommand")
    case("vague/unknown_option", "vague", ["run", "--bogus-option", "3"], "command line", "--bogus-option", json=True)
    case("vague/missing_value", "vague", ["run", "--model"], "command line", "--model")
    case("vague/not_a_number", "vague", ["run", "--temperature", "warm"], "command line", "--temperature")
    case("vague/certify_missing_required", "vague", ["certify", "--reference", g], "command line", "--candidate")
    case("vague/certify_greedy_prompt_tokens_neg", "vague",
         ["certify", "--reference", g, "--candidate", g, "--corpus", corpus, "--greedy-prompt-tokens", "-5"],
         "command line", "--greedy-prompt-tokens", forbid="_M_range")
    case("vague/tokenizer_is_directory", "vague", ["run", "--model", bin_, "--tokenizer", M + "/stories260K"],
         M + "/stories260K", "directory", forbid="basic_filebuf")
    weird = os.path.join(o, "vague", "no\x1b[31msuch\nfile.gguf")
    os.makedirs(os.path.dirname(weird), exist_ok=True)
    case("vague/ansi_newline_in_path", "vague", ["run", "--model", weird], "no\\x1b[31msuch\\nfile.gguf", "file")
    case("vague/ansi_in_option_value", "vague", ["run", "--kv", "\x1b[2Jbad"], "command line", "--kv")
    p = write(os.path.join(o, "vague", "thresholds_bad.json"), '{"kld_mean": {"max": "x\\u001b[0m"}}')
    case("vague/thresholds_bad_value", "vague",
         ["certify", "--reference", g, "--candidate", g, "--corpus", corpus, "--thresholds", p,
          "--ctx", "64", "--max-chunks", "1", "--greedy-prompts", "0", "--out", o + "/vague/cert"],
         p, "kld_mean", timeout=120)
    case("vague/golden_not_json", "vague", ["golden", "verify", write_golden_garbage(o)],
         os.path.join(o, "vague", "golden_garbage", "x.jsonl") + ":1", "record", forbid="json.exception")


def write_golden_garbage(o):
    d = os.path.join(o, "vague", "golden_garbage")
    write(d + "/x.jsonl", '{"id": "x", "model": \n')
    return d


def refused_cases(o, M):
    """8. Accepted silently before, refused now."""
    g = M + "/gguf/stories260K.gguf"
    corpus = M + "/../corpus/stories260K-samples.txt"
    for opt, val in [("--temperature", "-1"), ("--temperature", "nan"), ("--temperature", "inf"),
                     ("--top-k", "-5"), ("--top-p", "1.5"), ("--min-p", "-0.1"), ("--repeat-penalty", "0"),
                     ("--penalty-window", "-2"), ("--ban", "-1"), ("--stop-token", "-1"), ("--kv-block", "0"),
                     ("--max-tokens", "0"), ("--threads", "0"), ("--logprobs", "-1"), ("--kv", "ring")]:
        case("refused/run%s_%s" % (opt, val), "refused", ["run", opt, val, "-n", "2"], "command line", opt, json=True)
    case("refused/run_stop_token_oov", "refused", ["run", "--stop-token", "99999", "-n", "2"], "options",
         "stop_token_ids")
    case("refused/run_ban_oov", "refused", ["run", "--ban", "99999", "-n", "2"], "sampler", "banned_tokens")
    case("refused/run_mode_bogus", "refused", ["run", "--mode", "bogus", "-n", "2"], "bogus", "mode")
    case("refused/bench_mode_bogus", "refused", ["bench", "--mode", "bogus", "--prompt-tokens", "4",
                                                 "--decode-tokens", "4"], "bogus", "mode")
    case("refused/run_backend_bogus", "refused", ["run", "--backend", "bogus", "-n", "2"], "bogus", "backend")
    base = ["certify", "--reference", g, "--candidate", g, "--corpus", corpus]
    for opt, val in [("--threads", "-4"), ("--threads", "0"), ("--max-chunks", "-1"), ("--greedy-prompts", "-3"),
                     ("--ctx", "2"), ("--ctx", "-1")]:
        case("refused/certify%s_%s" % (opt, val), "refused", base + [opt, val], "command line", opt)
    case("refused/certify_protocol_bogus", "refused", base + ["--protocol", "bogus", "--out", o + "/refused/c"],
         "--protocol", "protocol")
    case("refused/bench_draft_vocab_mismatch", "refused",
         ["bench", "--model", M + "/stories260K/stories260K.bin", "--draft-model",
          M + "/aidreams260K/aidreams260K.bin", "--prompt-tokens", "8", "--decode-tokens", "8"],
         M + "/aidreams260K/", "tokens|vocab", json=True)
    case("refused/run_draft_vocab_mismatch", "refused",
         ["run", "--model", M + "/stories260K/stories260K.bin", "--draft-model",
          M + "/aidreams260K/aidreams260K.bin", "-n", "8"], M + "/aidreams260K/", "tokens|vocab")
    case("refused/spec_k_zero", "refused", ["run", "--spec-ngram", "2", "--spec-k", "0"], "command line", "--spec-k")


# ---------------------------------------------------------------------------------------------
# Issue 29's bad-input probe: accepted silently, or named what the user did not give
# ---------------------------------------------------------------------------------------------
def probe_cases(o, M, log_lines, golden_line):
    d = os.path.join(o, "probe")
    bench = ["bench", "--quiet", "--prompt-tokens", "2", "--decode-tokens", "2", "--model"]

    def overlap(header, blobs):  # k_proj's bytes are q_proj's (same size): the format forbids it
        header["model.layers.0.self_attn.k_proj.weight"]["data_offsets"] = \
            list(header["model.layers.0.self_attn.q_proj.weight"]["data_offsets"])

    p = safetensors_model(d + "/st_overlap", overlap)
    case("silent/safetensors_overlap", "silent", bench + [p], p + "/model.safetensors",
         "k_proj.*overlap|q_proj.*overlap")
    for name, val in [("null", None), ("gelu", "gelu"), ("empty", "")]:
        p = safetensors_model(d + "/act_" + name, config_tweak=lambda c, v=val: c.__setitem__("hidden_act", v))
        case("silent/config_hidden_act_" + name, "silent", bench + [p], p + "/config.json", "hidden_act")
    # foreign records (no "schema"): numbers outside their type's range name the field
    rec = json.loads(log_lines[0])
    bin_ = M + "/stories260K/stories260K.bin"
    for name, key, val in [("top_k_2p32", "top_k", 2 ** 32 + 40), ("seed_neg", "seed", -1),
                           ("max_tokens_2p32", "max_tokens", 2 ** 32 + 6), ("temperature_1e300", "temperature", 1e300),
                           ("top_p_float_max", "top_p", -1e39), ("penalty_window_frac", "penalty_window", 2.5),
                           ("prompt_id_2p32", "prompt_ids", [1, 2 ** 32 + 1]), ("prompt_id_oov", "prompt_ids", [1, 99999])]:
        f = {"prompt": rec["prompt"], "prompt_ids": rec["prompt_ids"], "temperature": 0,
             "choices": [{"token_ids": rec["output_ids"]}]}
        f[key] = val
        pf = write(os.path.join(d, "foreign_%s.jsonl" % name), json.dumps(f) + "\n")
        case("silent/replay_foreign_" + name, "silent", ["replay", pf, "--model", bin_, "--quiet"], None, None,
             exit=1, stderr_lines=0, stdout_re=r"foreign_%s\.jsonl:1: %s" % (name, key), forbid="json.exception")
    # an own record whose context exceeds the model's trained one (512): refused as `run` refuses it
    r = json.loads(log_lines[0])
    r["model"]["context"] = 4096
    pl = write(os.path.join(d, "own_context_4096.jsonl"), json.dumps(r) + "\n")
    case("silent/replay_own_context_past_trained", "silent", ["replay", pl, "--quiet"], bin_,
         "context_length.*4096.*allow-context-extension")
    # finite weights whose activations overflow: the error names the model file
    src = M + "/gguf/stories260K.gguf"
    data = open(src, "rb").read()
    g = Gguf(data)
    t = g.tensors["blk.0.ffn_down.weight"]
    assert t["type"] == 0
    blob = patch(data, g.tensor_at("blk.0.ffn_down.weight"), struct.pack("<%df" % 172, *([3.0e38] * 172)))
    p = write(os.path.join(d, "ffn_down_overflow.gguf"), blob)
    case("vague/activation_overflow_names_model", "vague", ["run", "--model", p, "-n", "4"], p,
         "blk\\.[0-9]+\\.(ffn|attn)_out|logits")
    # certify: the corpus file and --ctx are named as the user gave them
    corpus = M + "/../corpus/stories260K-samples.txt"
    bad = write(os.path.join(d, "corpus_bad_utf8.txt"), open(corpus, "rb").read()[:2000] + b"\xff\xfe tail\n")
    base = ["certify", "--reference", src, "--candidate", src]
    case("vague/certify_corpus_invalid_utf8", "vague", base + ["--corpus", bad, "--ctx", "64", "--out", d + "/cert"],
         bad, "corpus", forbid="<text>")
    case("vague/certify_ctx_100000", "vague", base + ["--corpus", corpus, "--ctx", "100000", "--out", d + "/cert"],
         src, "--ctx", forbid="--context")
    # golden records: a bad sampler names the golden file and line; paths stay in the fixtures folder
    shared = os.path.dirname(M)
    for name, tweak, field in [
            ("sampler_top_p_5", lambda r: r["sampler"].__setitem__("top_p", 5.0), "sampler.*top_p"),
            ("sampler_temperature_neg", lambda r: r["sampler"].__setitem__("temperature", -1.0), "sampler.*temperature"),
            ("model_etc_passwd", lambda r: r.__setitem__("model", "../../../etc/passwd"), "model"),
            ("model_absolute", lambda r: r.__setitem__("model", "/etc/passwd"), "model"),
            ("tokenizer_escapes", lambda r: r.__setitem__("tokenizer", "models/../../x.bin"), "tokenizer")]:
        r = json.loads(golden_line)
        tweak(r)
        gd = os.path.join(d, "golden_" + name)
        write(gd + "/stories260K.jsonl", json.dumps(r) + "\n")
        case("vague/golden_" + name, "vague", ["golden", "verify", gd, "--shared-dir", shared],
             gd + "/stories260K.jsonl:1", field)


# ---------------------------------------------------------------------------------------------
# Loader cases that already passed before issue 15 (kept so they stay passing)
# ---------------------------------------------------------------------------------------------
def loader_cases(o, M):
    g = M + "/gguf/stories260K.gguf"
    data = open(g, "rb").read()
    gg = Gguf(data)
    d = os.path.join(o, "loader")
    run = lambda p: ["run", "--model", p, "-n", "2"]  # noqa: E731
    case("loader/missing_file", "loader", run(d + "/nope.gguf"), d + "/nope.gguf", "file")
    # truncations at every header field boundary and inside the data
    cuts = sorted({0, 3, 4, 7, 8, 15, 16, 23, 24, 40, 100, 200, gg.kv["general.architecture"][2] + 3,
                   gg.tensors[gg.order[0]]["info_at"] + 5, gg.tensors[gg.order[-1]]["offset_at"] + 4,
                   gg.data_offset - 1, gg.data_offset + 10, len(data) // 2, len(data) - 4097, len(data) - 1})
    for cut in cuts:
        p = write(d + "/trunc_%d.gguf" % cut, data[:cut])
        case("loader/gguf_truncated_at_%d" % cut, "loader", run(p), p, ".")
    version_at, n_tensors_at, n_kv_at = 4, gg.n_tensors_at, gg.n_kv_at
    for name, at, blob, field in [("version_99", version_at, struct.pack("<I", 99), "version"),
                                  ("version_1", version_at, struct.pack("<I", 1), "version"),
                                  ("n_tensors_2p40", n_tensors_at, struct.pack("<Q", 2 ** 40), "n_tensors"),
                                  ("n_kv_2p62", n_kv_at, struct.pack("<Q", 2 ** 62), "n_kv"),
                                  ("tensor_dims_zero", gg.tensors[gg.order[1]]["dims_at"], struct.pack("<Q", 0), "dims"),
                                  ("tensor_dims_huge", gg.tensors[gg.order[1]]["dims_at"], struct.pack("<Q", 2 ** 41), "dims"),
                                  ("tensor_type_iq", gg.tensors[gg.order[1]]["type_at"], struct.pack("<I", 19), "type"),
                                  ("tensor_type_bogus", gg.tensors[gg.order[1]]["type_at"], struct.pack("<I", 99999), "type"),
                                  ("tensor_offset_unaligned", gg.tensors[gg.order[1]]["offset_at"],
                                   struct.pack("<Q", gg.tensors[gg.order[1]]["offset"] + 1), "offset"),
                                  ("tensor_offset_past_end", gg.tensors[gg.order[1]]["offset_at"],
                                   struct.pack("<Q", 2 ** 40), "offset|data"),
                                  ("kv_type_bogus", gg.kv["general.architecture"][2] - 4, struct.pack("<I", 77), "type"),
                                  ("string_len_huge", gg.kv["general.architecture"][2], struct.pack("<Q", 2 ** 50),
                                   "general\\.architecture")]:
        p = write(d + "/%s.gguf" % name, patch(data, at, blob))
        case("loader/gguf_" + name, "loader", run(p), p, field)
    # llama2.c
    b = M + "/stories260K/stories260K.bin"
    bd = open(b, "rb").read()
    tok = M + "/stories260K/tok512.bin"
    for name, at, val, field in [("n_kv_heads_3", 16, 3, "n_kv_heads"), ("dim_zero", 0, 0, "dim|magic"),
                                 ("dim_huge", 0, 2 ** 30, "dim|magic"), ("n_layers_neg", 8, -5, "n_layers"),
                                 ("n_heads_7", 12, 7, "n_heads"), ("seq_len_zero", 24, 0, "seq_len")]:
        p = write(d + "/bin_%s.bin" % name, patch(bd, at, struct.pack("<i", val)))
        case("loader/bin_" + name, "loader", ["run", "--model", p, "--tokenizer", tok, "-n", "2"], p, field)
    for cut in [0, 10, 27, 28, 500000, len(bd) - 1]:
        p = write(d + "/bin_trunc_%d.bin" % cut, bd[:cut])
        case("loader/bin_truncated_at_%d" % cut, "loader", ["run", "--model", p, "--tokenizer", tok, "-n", "2"], p, ".")
    p = write(d + "/bin_trailing.bin", bd + b"\0" * 8)
    case("loader/bin_trailing_bytes", "loader", ["run", "--model", p, "--tokenizer", tok, "-n", "2"], p, "size")
    # tokenizers
    td = open(tok, "rb").read()
    for cut in [0, 2, 4, 9, 100, len(td) - 1]:
        p = write(d + "/tok_trunc_%d.bin" % cut, td[:cut])
        case("loader/tokenizer_truncated_at_%d" % cut, "loader", ["run", "--model", b, "--tokenizer", p, "-n", "2"],
             p, ".")
    case("loader/tokenizer_vocab_mismatch", "loader",
         ["run", "--model", b, "--tokenizer", M + "/llama2-tokenizer/tokenizer.bin", "-n", "2"],
         M + "/llama2-tokenizer/tokenizer.bin", "vocab")
    case("loader/prompt_too_long", "loader", ["run", "--model", b, "--context", "8", "--prompt",
                                              "Once upon a time there was a little girl named Lily"],
         b, "prompt|context")
    case("loader/unknown_preset", "loader", ["synth", "--preset", "nosuch", "-o", d + "/x.gguf"], "nosuch", "preset")
    case("loader/quantize_unknown_type", "loader", ["quantize", g, d + "/q.gguf", "--type", "Q9_9"], "--type", "type")
    # (172-wide rows fit no 32-block; like llama-quantize they fall back to F16: audit/tests/test_quantize.cpp)
    # replay logs
    for name, text in [("empty", ""), ("blank_lines", "\n\n  \n"), ("garbage", "not json\n")]:
        p = write(d + "/replay_%s.jsonl" % name, text)
        case("loader/replay_" + name, "loader", ["replay", p], p, "records|model")
    case("loader/replay_missing", "loader", ["replay", d + "/nope.jsonl"], d + "/nope.jsonl", "file")
    case("loader/golden_verify_missing_dir", "loader", ["golden", "verify", d + "/nope"], d + "/nope", "DIR")
    os.makedirs(d + "/empty", exist_ok=True)
    case("loader/golden_verify_no_records", "loader", ["golden", "verify", d + "/empty"], d + "/empty", "DIR")


def setup(oracle, o, M):
    """Valid files the cases start from, written by `oracle` itself."""
    s = os.path.join(o, "setup")
    os.makedirs(s, exist_ok=True)
    log = s + "/log.jsonl"
    if os.path.exists(log):
        os.remove(log)
    for prompt in ["Once upon a time", "The dog"]:
        subprocess.run([oracle, "run", "-m", M + "/stories260K/stories260K.bin", "-p", prompt, "-n", "6",
                        "--log", log], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([oracle, "synth", "--preset", "tiny", "-o", s + "/tiny.gguf"], check=True,
                   stdout=subprocess.DEVNULL)
    return open(log).read().splitlines(keepends=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    o = os.path.abspath(a.out)
    if os.path.exists(o):
        shutil.rmtree(o)
    os.makedirs(o)
    M = os.path.abspath(a.shared) + "/models"
    log_lines = setup(a.oracle, o, M)
    golden_line = open(os.path.join(a.repo, "golden", "stories260K.jsonl")).readline()
    crash_cases(o, M, golden_line)
    hang_cases(o, M)
    overflow_cases(o, M, log_lines, golden_line)
    gguf_patch_cases(o, M)
    bin_cases(o, M)
    safetensors_cases(o)
    files_cases(o, M)
    memory_cases(o, M)
    message_cases(o, M)
    refused_cases(o, M)
    probe_cases(o, M, log_lines, golden_line)
    loader_cases(o, M)
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    with open(os.path.join(o, "cases.json"), "w") as f:
        json.dump(CASES, f, indent=1)
    counts = {}
    for c in CASES:
        counts[c["klass"]] = counts.get(c["klass"], 0) + 1
    print("%d cases in %s: %s" % (len(CASES), o, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))


if __name__ == "__main__":
    main()
