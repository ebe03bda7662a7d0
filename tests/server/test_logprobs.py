"""logprobs / top_logprobs through the official openai client: chat and completions,
whole and streamed, the same with and without the draft.

The reference is computed here, independently of the engine: the tiny target is
loaded on its own through llama-cpp-python's high-level ``Llama`` (logits of every
position in one plain evaluation) and log-softmaxed with numpy.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specula.core.chat.template import ChatTemplate
from specula.core.engine.native.llama import Model
from specula.server import LocalServer
from tests.server.conftest import post

MODEL = "tiny-target"
HELLO = [{"role": "user", "content": "hello world"}]
TOL = 5e-3  # batch shape moves llama.cpp's logits a little (docs/engine.md): ~2e-3 here
REF_TOL = 1e-2  # against one whole-sequence evaluation; a wrong formula (a temperature, a
# renormalisation over the top-k or the grammar's tokens) is off by 0.05 or more


def _chat(client: Any, **kw: Any) -> Any:
    args: dict[str, Any] = {"model": MODEL, "messages": HELLO, "max_tokens": 24, "temperature": 0,
                            "logprobs": True, "top_logprobs": 5}
    args.update(kw)
    return client.chat.completions.create(**args)


def _reference(path: Path, prompt: list[int], reply: list[int]) -> np.ndarray:
    """log-softmax of the target's logits at each reply position (plain, no draft)."""
    from llama_cpp import Llama

    llm = Llama(str(path), n_ctx=512, logits_all=True, verbose=False, n_threads=1)
    try:
        llm.eval(prompt + reply)
        logits = np.asarray(llm.scores[len(prompt) - 1: len(prompt) + len(reply) - 1],
                            dtype=np.float64)
    finally:
        llm.close()
    mx = logits.max(axis=1, keepdims=True)
    return logits - (mx + np.log(np.exp(logits - mx).sum(axis=1, keepdims=True)))


def test_chat_logprobs_are_the_targets_and_list_the_best_alternatives(
        tool_client: Any, qwen_pair: dict[str, Path]) -> None:
    resp = _chat(tool_client)
    entries = resp.choices[0].logprobs.content
    assert len(entries) == resp.usage.completion_tokens
    text = b"".join(bytes(e.bytes) for e in entries).decode("utf-8", errors="replace")
    assert text == resp.choices[0].message.content  # the random model writes stray bytes
    for e in entries:
        tops = [t.logprob for t in e.top_logprobs]
        assert len(tops) == 5 and tops == sorted(tops, reverse=True)
        assert e.logprob == pytest.approx(tops[0], abs=1e-9)  # greedy: the chosen one is the best
        assert sum(math.exp(t) for t in tops) <= 1 + 1e-6
    # The reference: the prompt's tokens and the reply's (told by their bytes) through Llama.
    model = Model(qwen_pair["target"], vocab_only=True)
    try:
        prompt = ChatTemplate.for_model(model).tokenize(model, HELLO)
        vocab = {model.piece(i): i for i in range(model.n_vocab)}
    finally:
        model.close()
    ids = [vocab[bytes(e.bytes)] for e in entries]
    ref = _reference(qwen_pair["target"], prompt, ids)
    got = np.array([e.logprob for e in entries])
    assert np.allclose(got, ref[np.arange(len(ids)), ids], atol=REF_TOL)
    for row, e in zip(ref, entries, strict=True):
        best = np.argsort(-row)[:5]
        assert np.allclose([t.logprob for t in e.top_logprobs], row[best], atol=REF_TOL)


def test_chat_logprobs_do_not_depend_on_the_draft(tool_client: Any) -> None:
    plain = _chat(tool_client, extra_body={"specula": {"mode": "plain"}})
    chain = _chat(tool_client)
    assert chain.model_extra["specula"]["accepted"] > 0
    a, b = plain.choices[0].logprobs.content, chain.choices[0].logprobs.content
    assert [e.token for e in a] == [e.token for e in b]
    assert np.allclose([e.logprob for e in a], [e.logprob for e in b], atol=TOL)


def test_streamed_chat_logprobs_are_the_whole_replys(tool_client: Any) -> None:
    whole = _chat(tool_client).choices[0].logprobs.content
    chunks = list(_chat(tool_client, stream=True))
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                for e in c.choices[0].logprobs.content]
    assert [(e.token, e.bytes) for e in streamed] == [(e.token, e.bytes) for e in whole]
    assert np.allclose([e.logprob for e in streamed], [e.logprob for e in whole], atol=1e-9)


def test_logprobs_under_a_grammar_are_the_models_own(tool_client: Any) -> None:
    """The grammar picks among allowed tokens; the reported numbers stay the model's."""
    resp = _chat(tool_client, response_format={"type": "json_object"}, max_tokens=40)
    entries = resp.choices[0].logprobs.content
    assert entries and entries[0].token.startswith("{")
    assert all(e.logprob <= e.top_logprobs[0].logprob + 1e-9 for e in entries)


def test_completions_logprobs_whole_and_streamed(tool_client: Any) -> None:
    kw: dict[str, Any] = {"model": MODEL, "prompt": "the code", "max_tokens": 16,
                          "temperature": 0, "logprobs": 3}
    whole = tool_client.completions.create(**kw).choices[0]
    lp = whole.logprobs
    assert "".join(lp.tokens) == whole.text
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset)
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(lp.tokens))]
    for tok, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert len(top) <= 3 and logprob == pytest.approx(max(top.values()), abs=1e-9)
        assert top.get(tok) == pytest.approx(logprob, abs=1e-9)
    chunks = list(tool_client.completions.create(**kw, stream=True))
    tokens = [t for c in chunks if c.choices and c.choices[0].logprobs
              for t in c.choices[0].logprobs.tokens]
    offsets = [o for c in chunks if c.choices and c.choices[0].logprobs
               for o in c.choices[0].logprobs.text_offset]
    assert tokens == lp.tokens and offsets == lp.text_offset


def test_no_logprobs_unless_asked(tool_client: Any) -> None:
    resp = tool_client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=4)
    assert resp.choices[0].logprobs is None
    text = tool_client.completions.create(model=MODEL, prompt="x", max_tokens=4)
    assert text.choices[0].logprobs is None


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ("/v1/chat/completions", {"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
    ("/v1/chat/completions", {"top_logprobs": 3}, "top_logprobs"),
    ("/v1/chat/completions", {"logprobs": 3}, "logprobs"),
    ("/v1/completions", {"logprobs": 21}, "logprobs"),
    ("/v1/completions", {"logprobs": True}, "logprobs"),
])
def test_bad_logprobs_are_400s(tool_server: LocalServer, path: str, body: dict[str, Any],
                               param: str) -> None:
    base: dict[str, Any] = {"model": MODEL, "messages": HELLO} if "chat" in path else \
        {"model": MODEL, "prompt": "x"}
    status, reply, _ = post(tool_server, path, {**base, **body})
    assert status == 400 and reply["error"]["param"] == param
