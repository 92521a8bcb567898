"""Worked example (b), docs/python.md: llama.cpp (llama-cpp-python, PyPI; it builds
llama.cpp from source) as the engine under test. SmolLM2 runs teacher-forced with
logits_all=True and llm_oracle.compare scores its logits against the reference
model of the same file: the same figures `oracle compare` prints for the same
logits. Label peer (ctest -R python_tests_peer); skipped without llama_cpp.
llama-cpp-python installed without its own llama.cpp build (LLAMA_BUILD=OFF) loads
the peer's libllama (scripts/build_peer.sh, PEER_DIR, default /work/peer as
scripts/arch_crosscheck.sh) through LLAMA_CPP_LIB_PATH, set here when unset."""
import json
import os

import numpy as np
import pytest

import llm_oracle

PROMPT = ("The capital of France is Paris. The capital of Germany is Berlin. "
          "The capital of Italy is Rome. The capital of Spain is")


PEER_LIB = os.path.join(os.environ.get("PEER_DIR", "/work/peer"), "build", "bin")


@pytest.mark.peer
def test_llama_cpp_python_logits_scored_like_oracle_compare(smollm2_path, oracle_cli, tmp_path):
    if "LLAMA_CPP_LIB_PATH" not in os.environ and os.path.exists(os.path.join(PEER_LIB, "libllama.so")):
        os.environ["LLAMA_CPP_LIB_PATH"] = PEER_LIB
    llama_cpp = pytest.importorskip("llama_cpp")
    m = llm_oracle.Model(smollm2_path)
    ids = m.tokenize(PROMPT)
    llm = llama_cpp.Llama(model_path=smollm2_path, n_ctx=256, n_batch=256, logits_all=True, n_threads=2,
                          seed=0, verbose=False)
    llm.eval(ids)
    theirs = np.ascontiguousarray(np.asarray(llm.scores[:len(ids)], dtype=np.float32))
    # Row t predicts ids[t + 1]: the last row has no following token in `ids`.
    steps = len(ids) - 1
    report = llm_oracle.compare(np.ascontiguousarray(theirs[:steps]), np.ascontiguousarray(m.logits(ids)[:steps]),
                                tokens=ids[1:], name="llama-cpp-python")
    np.save(tmp_path / "theirs.npy", theirs[:steps])
    (tmp_path / "prompt.txt").write_text(str(ids[0]))
    (tmp_path / "tokens.txt").write_text(",".join(map(str, ids[1:])))
    cli = oracle_cli("compare", tmp_path / "theirs.npy", "--prompt-ids", tmp_path / "prompt.txt", "--token-ids",
                     tmp_path / "tokens.txt", "-m", smollm2_path, "--json", ok=(0, 1))
    print(f"\nllama-cpp-python {llama_cpp.__version__} vs llm_oracle on {os.path.basename(smollm2_path)}, "
          f"{steps} teacher-forced positions")
    print(repr(report))
    print("llm_oracle.compare:", json.dumps(report["summary"]))
    print("oracle compare    :", json.dumps(cli["summary"]))
    assert report["summary"] == cli["summary"] and report["per_step"] == cli["per_step"]
    assert report["steps"] == steps
