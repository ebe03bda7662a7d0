"""Constrained decoding is exact in every mode: greedy equals plain constrained greedy,
seeded coupled sampling gives the same text, forbidden draft tokens never come out,
and every finished reply validates against its grammar or schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters import ChainDrafter, Proposal
from specula.core.engine.engine import Engine
from specula.core.engine.events import StopReason
from specula.core.engine.grammar import state as G
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, chain, make_engine, run
from tests.core.engine.grammar_lang import (
    SMALL_GBNF,
    allowed_mask,
    complete,
    pieces,
    validate,
    viable,
)
from tests.core.engine.reference import FreshTarget

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z ]{1,10}$"},
        "note": {"type": "string", "maxLength": 6},
        "kind": {"enum": ["zebra", "quartz", "lorem"]},
        "inner": {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "ok": {"type": "boolean"},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
            },
            "required": ["n", "ok", "tags"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "kind", "inner"],
    "additionalProperties": False,
}
GRAMMARS = {"schema": G.json_schema_grammar(SCHEMA), "json": G.JSON_OBJECT_GRAMMAR, "gbnf": SMALL_GBNF}
MODES = {
    "chain": chain(3),
    "tree": SpecConfig(mode=Mode.TREE, draft_max=3, tree_budget=8, tree_width=2),
    "lookup": SpecConfig(mode=Mode.LOOKUP, draft_max=4),
    "adaptive": SpecConfig(mode=Mode.ADAPTIVE, draft_max=4),
}
PROMPTS = ["lorem ipsum zebra", "the code and the model", "x"]


@pytest.fixture(scope="module")
def strong(tiny: dict[str, Path]) -> Iterator[Engine]:
    """The target with the draft that is always right: every mode drafts and accepts."""
    eng = make_engine(tiny["target"], tiny["exact_draft"])
    yield eng
    eng.close()


def check_reply(kind: str, done_text: str, stop: StopReason) -> None:
    """A finished reply is in its language; one cut by the token limit is a prefix of it."""
    if kind == "gbnf":
        data = done_text.encode()
        assert complete(data) if stop is StopReason.EOS else viable(data), done_text
    elif stop is StopReason.EOS:
        value = json.loads(done_text)
        assert isinstance(value, dict)
        if kind == "schema":
            validate(value, SCHEMA)
    else:
        assert done_text.lstrip().startswith("{"), done_text


@pytest.mark.parametrize("kind", list(GRAMMARS))
@pytest.mark.parametrize("draft", ["draft", "exact_draft"])
def test_constrained_greedy_is_the_same_in_every_mode(tiny: dict[str, Path], kind: str,
                                                      draft: str) -> None:
    eng = make_engine(tiny["target"], tiny[draft])
    sp = SamplingParams(max_tokens=120, grammar=GRAMMARS[kind])
    drafted = accepted = 0
    for prompt in PROMPTS:
        plain, _ = run(eng, prompt, sp, PLAIN)
        check_reply(kind, plain.text, plain.stop_reason)
        for mode, sc in MODES.items():
            done, events = run(eng, prompt, sp, sc)
            assert done.token_ids == plain.token_ids, (kind, prompt, mode)
            assert done.stop_reason is plain.stop_reason
            assert "".join(e.text for e in events) == done.text == plain.text
            drafted += done.stats.drafted
            accepted += done.stats.accepted
    eng.close()
    assert drafted > 50 and accepted > 20, (drafted, accepted)  # the modes really drafted


def test_a_complete_grammar_ends_the_reply_with_eos(engine: Engine) -> None:
    """The schema is bounded: once the object is closed only end-of-generation is allowed."""
    for prompt in PROMPTS:
        done, _ = run(engine, prompt, SamplingParams(max_tokens=200, grammar=GRAMMARS["schema"]),
                      chain(3))
        assert done.stop_reason is StopReason.EOS, done.text
        validate(json.loads(done.text), SCHEMA)


def test_plain_constrained_greedy_matches_an_independent_mask(engine: Engine, ref: FreshTarget) -> None:
    """Each token is the argmax of a fresh context's logits over the tokens the hand-written
    language allows (compared while the best two allowed logits are not a near-tie)."""
    toks = pieces(ref)
    prompt = engine.tokenize_chat([{"role": "user", "content": "zebra"}])
    done, _ = run(engine, prompt, SamplingParams(max_tokens=24, grammar=SMALL_GBNF), PLAIN)
    text = b""
    compared = 0
    assert done.stop_reason in (StopReason.EOS, StopReason.MAX_TOKENS)
    end = [-1] if done.stop_reason is StopReason.EOS else []
    for i, tok in enumerate([*done.token_ids, *end]):
        x = np.where(allowed_mask(text, toks, ref), ref.logits([*prompt, *done.token_ids[:i]]), -np.inf)
        order = np.argsort(-x)
        if x[order[0]] - x[order[1]] < 1e-3:
            break
        want = int(order[0])
        if tok == -1:  # the reply ended with EOS: the argmax is end-of-generation
            assert ref.is_eog(want)
            break
        assert tok == want, (i, text)
        text += toks[tok]
        compared += 1
    assert compared >= 3


def test_a_draft_that_proposes_forbidden_tokens(tiny: dict[str, Path], ref: FreshTarget,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With the draft's mask off, the draft proposes tokens the grammar forbids (counted
    with the hand-written language); the target rejects every one of them."""
    monkeypatch.setattr(G, "draft_candidates", lambda state, logits, params: sampling.candidates(logits, params))
    toks = pieces(ref)
    forbidden = 0
    seen: list[tuple[list[int], list[int]]] = []
    orig = ChainDrafter.propose

    def spy(self: ChainDrafter, req: Any) -> Proposal:
        prop = orig(self, req)
        seen.append((list(req.committed), list(prop.tokens)))
        return prop

    monkeypatch.setattr(ChainDrafter, "propose", spy)
    eng = make_engine(tiny["target"], tiny["draft"])
    for prompt in PROMPTS:
        ids = eng.tokenize_chat([{"role": "user", "content": prompt}])
        for sp in (SamplingParams(max_tokens=24, grammar=SMALL_GBNF),
                   SamplingParams(max_tokens=24, grammar=SMALL_GBNF, temperature=0.9, seed=3,
                                  rule=sampling.Rule.REJECTION),
                   SamplingParams(max_tokens=24, grammar=SMALL_GBNF, temperature=0.9, seed=3)):
            seen.clear()
            done, _ = run(eng, ids, sp, chain(4))
            assert done.stop_reason in (StopReason.EOS, StopReason.MAX_TOKENS), done.message
            check_reply("gbnf", done.text, done.stop_reason)
            for committed, proposal in seen:
                text = b"".join(toks[t] for t in committed[len(ids):])
                for t in proposal:
                    if ref.is_eog(t) or not toks[t] or not viable(text + toks[t]):
                        forbidden += 1
                        break
                    text += toks[t]
    eng.close()
    assert forbidden > 5, "the unmasked draft must have proposed forbidden tokens"


@pytest.mark.parametrize("kind", ["schema", "gbnf"])
def test_seeded_coupled_sampling_is_the_same_text_in_every_mode(strong: Engine, engine: Engine,
                                                                kind: str) -> None:
    for eng in (strong, engine):
        for seed in range(4):
            sp = SamplingParams(temperature=0.9, top_k=20, top_p=0.95, min_p=0.02, seed=seed,
                                max_tokens=80, grammar=GRAMMARS[kind])
            plain, _ = run(eng, PROMPTS[seed % 3], sp, PLAIN)
            check_reply(kind, plain.text, plain.stop_reason)
            for mode, sc in MODES.items():
                done, _ = run(eng, PROMPTS[seed % 3], sp, sc)
                assert done.token_ids == plain.token_ids, (kind, seed, mode)


@pytest.mark.parametrize("rule", [sampling.Rule.REJECTION, sampling.Rule.COUPLED])
def test_sampled_replies_validate(engine: Engine, rule: sampling.Rule) -> None:
    for seed in range(6):
        sp = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed, rule=rule,
                            max_tokens=200, grammar=GRAMMARS["schema"])
        for sc in (PLAIN, chain(3), MODES["tree"]):
            done, _ = run(engine, PROMPTS[seed % 3], sp, sc)
            check_reply("schema", done.text, done.stop_reason)


def test_cancel_and_close_free_the_grammar(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every llama grammar sampler made for a reply (the reply's, the drafters' clones)
    is freed, whether the reply ends, is cancelled, or its iterator is dropped."""
    live: set[int] = set()
    orig_init, orig_close = G.GrammarState.__init__, G.GrammarState.close

    def init(self: G.GrammarState, *args: Any) -> None:
        orig_init(self, *args)
        live.add(id(self))

    def close(self: G.GrammarState) -> None:
        live.discard(id(self))
        orig_close(self)

    monkeypatch.setattr(G.GrammarState, "__init__", init)
    monkeypatch.setattr(G.GrammarState, "close", close)
    sp = SamplingParams(max_tokens=60, grammar=GRAMMARS["json"])
    for sc in (chain(3), MODES["tree"], MODES["lookup"]):
        run(engine, "lorem", sp, sc)
        assert not live
        it = engine.chat([{"role": "user", "content": "lorem"}], sp, sc)
        for _ in range(3):
            next(it)
        it.close()  # type: ignore[attr-defined]
        assert not live
    import threading

    cancel = threading.Event()
    cancel.set()
    done, _ = run(engine, "lorem", sp, chain(3), cancel=cancel)
    assert done.stop_reason is StopReason.CANCELLED and not live


def test_draft_and_target_share_full_vocabulary_checks(engine: Engine,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Under sampling, structural positions allow fewer tokens than top-k and need the
    whole vocabulary; the draft's answer for a position of its proposal is reused when
    the target verifies it. The reply is the same without the memo."""
    calls = {"all": 0, "checked": 0}
    orig_all, orig_check = G.GrammarState.allowed_all, G.GrammarState._check_all

    def allowed_all(self: G.GrammarState, n: int) -> Any:
        calls["all"] += 1
        return orig_all(self, n)

    def check_all(self: G.GrammarState, n: int) -> Any:
        calls["checked"] += 1
        return orig_check(self, n)

    monkeypatch.setattr(G.GrammarState, "allowed_all", allowed_all)
    monkeypatch.setattr(G.GrammarState, "_check_all", check_all)
    sp = SamplingParams(temperature=0.8, seed=5, max_tokens=80, grammar=GRAMMARS["schema"])
    with_memo, _ = run(engine, PROMPTS[0], sp, chain(3))
    assert calls["all"] > 10 and calls["checked"] < 0.75 * calls["all"], calls
    monkeypatch.setattr(G.GrammarState, "MEMO_SIZE", 0)
    without, _ = run(engine, PROMPTS[0], sp, chain(3))
    assert without.token_ids == with_memo.token_ids
