"""llm_oracle.Model against the C++ API (api_probe) and the CLI (`oracle run --json`,
`oracle tokenize`): the same logits bits, trace, ids and text; errors mapped."""
import hashlib

import numpy as np
import pytest

import llm_oracle
from llm_oracle.testing import assert_bit_exact

PROMPT = "Once upon a time"


def test_logits_match_cpp_and_oracle_runs_sha256(stories, stories_path, probe, oracle_cli):
    run = oracle_cli("run", "-m", stories_path, "-p", PROMPT, "-n", 6, "--temp", 0, "--json")
    ids = run["prompt_ids"] + run["output_ids"][:-1]
    logits = stories.logits(ids)
    assert logits.shape == (len(ids), stories.info["vocab_size"]) and logits.dtype == np.float32
    assert_bit_exact(logits.ravel(), probe("logits", stories_path, "@OUT", *ids))
    # oracle run records each step's logits SHA-256: decode step s is teacher-forced row n_prompt-1+s.
    first = len(run["prompt_ids"]) - 1
    shas = [hashlib.sha256(logits[first + s].tobytes()).hexdigest() for s in range(len(run["output_ids"]))]
    assert shas == [step["logits_sha256"] for step in run["steps"]]
    assert_bit_exact(stories.logits(np.array(ids, dtype=np.int64), threads=3), logits)


def test_trace_matches_cpp(stories, stories_path, probe):
    ids = stories.tokenize(PROMPT)
    t = stories.trace(ids)
    names = list(t)
    assert names[0] == "blk.0.attn_norm" and "output_norm" in names and "logits" in names
    assert all(a.shape[0] == len(ids) for a in t.values())
    # The probe writes the values in execution order and prints "name pos" for each.
    flat = probe("trace", stories_path, "@OUT", *ids)
    order = [line.split() for line in probe.last_stdout.splitlines()]
    assert len(order) == sum(a.shape[0] for a in t.values())
    assert_bit_exact(np.concatenate([t[n][int(p)] for n, p in order]), flat)
    assert_bit_exact(t["logits"], stories.logits(ids))


def test_generate_matches_oracle_run(stories, stories_path, oracle_cli):
    run = oracle_cli("run", "-m", stories_path, "-p", PROMPT, "-n", 12, "--temp", 0.8, "--top-k", 40, "--seed", 7, "--json")
    g = stories.generate(PROMPT, max_tokens=12, temperature=0.8, top_k=40, seed=7)
    assert g["ids"] == run["output_ids"] and g["prompt_ids"] == run["prompt_ids"]
    assert g["text"] == run["text"]
    assert g["logits_sha256"] == [s["logits_sha256"] for s in run["steps"]]


def test_tokenize_detokenize_match_cli(stories, stories_path, oracle_cli, probe):
    ids = stories.tokenize(PROMPT)
    assert ids == [int(i) for i in probe("tokenize", stories_path, PROMPT).split()]
    cli = oracle_cli("tokenize", "-m", stories_path, "-p", PROMPT, "--json")
    assert ids == cli["ids"]
    assert stories.detokenize(ids) == PROMPT


def test_sampler_matches_cpp(stories, probe):
    logits = stories.logits(stories.tokenize(PROMPT))[-1].copy()
    for seed, pos in [(1, 5), (2, 9), (3, 5)]:
        s = llm_oracle.Sampler(logits.size, temperature=0.9, top_k=20, top_p=0.95, seed=seed)
        r = s.sample(logits, seq=0, position=pos)
        assert r["token"] == int(probe("sample", logits, 0.9, 20, 0.95, seed, 0, pos))
        assert len(r["ids"]) == r["probs"].size <= 20
    with pytest.raises(llm_oracle.InputError) as e:
        llm_oracle.Sampler(logits.size, tempreature=0.5)
    assert e.value.field == "tempreature"


def test_chat_prompt_uses_the_template(smollm2_path):
    m = llm_oracle.Model(smollm2_path)
    p = m.chat_prompt([{"role": "user", "content": "Hi"}])
    assert p.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert m.chat_prompt([("user", "Hi")]) == p


def test_errors_carry_file_and_field(tmp_path, stories):
    with pytest.raises(ValueError) as e:
        llm_oracle.Model(str(tmp_path / "missing.gguf"))
    assert e.value.file.endswith("missing.gguf") and e.value.field
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    with pytest.raises(llm_oracle.InputError) as e:
        llm_oracle.Model(str(bad))
    assert e.value.file == str(bad)
    with pytest.raises(llm_oracle.InputError) as e:
        stories.logits([1, 10 ** 6])
    assert e.value.field == "token"
    with pytest.raises(llm_oracle.InputError) as e:
        stories.logits(np.array([1.0, 2.0]))
    assert e.value.field == "dtype"
    with pytest.raises(llm_oracle.InputError):
        stories.logits([])
    with pytest.raises(llm_oracle.InputError) as e:
        stories.chat_prompt([{"role": "user", "content": "x"}])  # llama2.c vocab: no template
    assert e.value.field == "tokenizer.chat_template"


def test_version_is_the_clis(oracle_cli):
    assert llm_oracle.version() == oracle_cli("version", "--json")["version"]
    assert llm_oracle.numerics_version() >= 1


def test_concurrent_calls_on_one_model_give_the_same_bits(stories):
    import threading
    ids = stories.tokenize("Once upon a time there was a little girl")
    want = stories.logits(ids)
    got = [None] * 4

    def work(i):
        got[i] = stories.logits(ids)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in got:
        assert_bit_exact(g, want)


def test_chat_matches_oracle_run_chat(smollm2_path, oracle_cli):
    m = llm_oracle.Model(smollm2_path)
    run = oracle_cli("run", "-m", smollm2_path, "--chat", "What is the capital of France?", "-n", 4, "--temp", 0,
                     "--json")
    r = m.chat([{"role": "user", "content": "What is the capital of France?"}], max_tokens=4, temperature=0)
    assert r["prompt_ids"] == run["prompt_ids"] and r["ids"] == run["output_ids"] and r["text"] == run["text"]
