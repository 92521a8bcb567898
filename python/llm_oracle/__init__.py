"""LLM Oracle as a library: the bit-exact reference inside your tests (docs/python.md).

    import llm_oracle
    m = llm_oracle.Model("model.gguf")
    ref = m.logits(ids)                       # (len(ids), vocab) float32, teacher-forced
    report = llm_oracle.compare(my_logits, ref)
    assert report["pass"], report
"""
import json as _json

from . import _core
from ._core import InputError, Model, Sampler, numerics_version, ulp_distance, version
from . import ops, testing

__all__ = ["InputError", "Model", "Sampler", "Report", "compare", "certify", "compare_tensor", "ops",
           "testing", "ulp_distance", "version", "numerics_version"]


class Report(dict):
    """`oracle compare --json`'s object as a dict; repr() is its markdown table."""

    def __init__(self, data, markdown):
        super().__init__(data)
        self.markdown = markdown

    def __repr__(self):
        return self.markdown

    __str__ = __repr__

    def __bool__(self):
        return bool(self.get("pass", False))


def compare(theirs, ours, ids=None, *, tokens=None, threads=1, max_kld=1e-4, max_flips=0, tie_rel=1e-4,
            max_abs=None, max_nmse=None, max_ulp=None, name="candidate"):
    """Score an engine's logits `theirs` (steps, vocab) float32 against the reference.

    `ours` is the reference's logits (same shape), or a Model: then `ids` are run
    teacher-forced through it and row t of `theirs` must be the logits after ids[0..t].
    Returns a Report (dict): kld_mean/kld_max, top1_agree, ties, flips, max_ulp, nmse_max,
    pass, per_step ...; the same figures `oracle compare` prints.
    """
    if isinstance(ours, Model):
        if ids is None:
            raise InputError("compare: ids: comparing against a Model needs the token ids")
        ours = ours.logits(ids, threads=threads)
    data, markdown = _core.compare_logits(
        ours, theirs, list(tokens or []), max_kld=max_kld, max_flips=max_flips, tie_rel=tie_rel,
        max_abs=-1.0 if max_abs is None else max_abs, max_nmse=-1.0 if max_nmse is None else max_nmse,
        max_ulp=-1 if max_ulp is None else max_ulp, want_name="reference", got_name=name)
    return Report(_json.loads(data), markdown)


def certify(reference, candidate, next_tokens=None, *, corpus=None, protocol="full", ctx=128, threads=1,
            max_chunks=0, greedy_prompts=16, greedy_prompt_tokens=16, greedy_steps=32):
    """The certify statistics (docs/certify.md): KLD mean ± se and percentiles, same-top
    fraction, Δp, perplexities and their ratio. Returns a dict.

    certify(ref_logits, cand_logits, next_tokens): two (rows, vocab) float32 arrays, next_tokens[r]
    being the token that followed row r.
    certify(ref_model, cand_model, corpus=text, ctx=128, ...): `oracle certify` on two Models and a
    corpus (chunks of ctx tokens, every prediction scored, then greedy agreement under "greedy")."""
    if isinstance(reference, Model):
        if corpus is None:
            raise InputError("certify: corpus: certifying two models needs the corpus text")
        return _core.certify_models(reference, candidate, corpus, protocol=protocol, ctx=ctx, threads=threads,
                                    max_chunks=max_chunks, greedy_prompts=greedy_prompts,
                                    greedy_prompt_tokens=greedy_prompt_tokens, greedy_steps=greedy_steps)
    return _core.certify_stats(reference, candidate, list(next_tokens))


def compare_tensor(want, got):
    """bit_equal, first_diff (flat index), max_abs, max_ulp, nmse of two float32 arrays."""
    return _core.compare_tensor(want, got)
