"""llm_oracle.compare / certify: the figures `oracle compare` prints for the same logits."""
import json

import numpy as np

import llm_oracle


def test_compare_equals_oracle_compare(stories, stories_path, oracle_cli, probe, tmp_path):
    ids = stories.tokenize("Once upon a time there was")
    ref = stories.logits(ids)
    noisy = ref + np.float32(0.01) * np.random.default_rng(3).standard_normal(ref.shape).astype(np.float32)
    steps = len(ids) - 1
    theirs = np.ascontiguousarray(noisy[:steps])
    report = llm_oracle.compare(theirs, np.ascontiguousarray(ref[:steps]), tokens=ids[1:])
    assert report == json.loads(probe("compare", ref[:steps], theirs, steps, ref.shape[1], *ids[1:]))
    np.save(tmp_path / "theirs.npy", theirs)
    (tmp_path / "prompt.txt").write_text(str(ids[0]))
    (tmp_path / "tokens.txt").write_text(",".join(map(str, ids[1:])))
    cli = oracle_cli("compare", tmp_path / "theirs.npy", "--prompt-ids", tmp_path / "prompt.txt", "--token-ids",
                     tmp_path / "tokens.txt", "-m", stories_path, "--json")
    assert report["summary"] == cli["summary"] and report["pass"] == cli["pass"]
    assert report["per_step"] == cli["per_step"]
    assert "KLD" in repr(report) and "|" in repr(report)


def test_compare_against_a_model_and_identical_rows(stories):
    ids = stories.tokenize("Once upon a time")
    r = llm_oracle.compare(stories.logits(ids), stories, ids)
    s = r["summary"]
    assert r["pass"] and bool(r) and s["max_ulp"] == 0 and s["kld_max"] == 0 and s["first_bit_diff"] == -1


def test_certify_stats_match_cpp(stories, probe):
    ids = stories.tokenize("Once upon a time there was a little girl")
    ref = stories.logits(ids)[:-1].copy()
    cand = (ref * np.float32(0.98)).astype(np.float32)
    s = llm_oracle.certify(ref, cand, ids[1:])
    want = [float(v) for v in probe("certify", ref, cand, ref.shape[0], ref.shape[1], *ids[1:]).split()]
    assert [s["kld"]["mean"], s["kld"]["se"], s["same_top"]["mean"], s["ppl_ref"]["mean"]] == want
    assert s["n"] == len(ids) - 1 and len(s["per_row_kld"]) == s["n"]


def test_ulp_distance_agrees_with_testing_helper():
    from llm_oracle.testing import ulp_distances
    a = np.array([0.0, -0.0, 1.0, -1.0, np.inf, np.nan, 1e-45], dtype=np.float32)
    b = np.array([-0.0, 1e-45, np.nextafter(np.float32(1), np.float32(2)), 1.0, np.inf, np.nan, -1e-45], dtype=np.float32)
    assert [int(d) for d in ulp_distances(a, b)] == [llm_oracle.ulp_distance(float(x), float(y)) for x, y in zip(a, b)]


def test_certify_models_equals_oracle_certify(oracle_cli, tmp_path):
    from conftest import SHARED
    ref_path = SHARED / "models" / "gguf" / "stories260K.gguf"
    cand_path = SHARED / "models" / "gguf" / "stories260K-f16.gguf"
    corpus = SHARED / "corpus" / "stories260K-samples.txt"
    cli = oracle_cli("certify", "--reference", ref_path, "--candidate", cand_path, "--corpus", corpus, "--ctx", 64,
                     "--max-chunks", 3, "--greedy-prompts", 2, "--greedy-steps", 8, "--out", tmp_path / "cert",
                     "--no-png", "-q", "--json", ok=(0, 1))
    ref, cand = llm_oracle.Model(str(ref_path)), llm_oracle.Model(str(cand_path))
    s = llm_oracle.certify(ref, cand, corpus=corpus.read_text(), ctx=64, max_chunks=3, greedy_prompts=2,
                           greedy_steps=8, threads=2)
    st = cli["statistics"]
    assert s["n"] == st["tokens_scored"] and s["chunks"] == cli["protocol"]["chunks"] == 3
    assert s["kld"]["mean"] == st["kld"]["mean"] and s["kld"]["se"] == st["kld"]["se"]
    assert s["same_top"] == st["same_top"]
    assert s["ppl_ref"] == st["perplexity"]["reference"] and s["ratio"] == st["perplexity"]["ratio"]
    assert s["greedy"]["first_divergence"] == cli["greedy"]["first_divergence"]
    assert dict(s["kld_percentiles"])[100.0] == st["kld"]["percentiles"]["100"]
