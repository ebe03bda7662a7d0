"""A request's grammar is parsed once: the same llama.cpp grammar serves the check that
turns a bad grammar into a 400 and the whole reply.

The count is taken at llama.cpp's own entry point (``llama_cpp.llama_sampler_init_grammar``,
which parses the GBNF text and builds its rules); a clone along a proposal copies a
parsed grammar and is not a parse.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done
from specula.core.engine.sampling.rules import SamplingParams
from specula.server import LocalServer
from tests.core.engine.conftest import make_engine
from tests.server.conftest import post
from tests.server.test_tool_calls import TOOLS

ASK = [{"role": "user", "content": "Describe the order as JSON."}]
GRAMMAR = 'root ::= "answer: " ("yes" | "no") "."'
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The GBNF texts llama.cpp was asked to parse while the test ran (any thread)."""
    seen: list[bytes] = []
    real = llama_cpp.llama_sampler_init_grammar

    def counting(vocab: Any, text: bytes, root: bytes) -> Any:
        seen.append(text)
        return real(vocab, text, root)

    monkeypatch.setattr(llama_cpp, "llama_sampler_init_grammar", counting)
    yield seen


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/chat/completions", {"specula": {"grammar": GRAMMAR}}),
    ("/v1/chat/completions", {"response_format": {"type": "json_object"}}),
    ("/v1/chat/completions", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": SCHEMA}}}),
    ("/v1/chat/completions", {"tools": TOOLS, "tool_choice": "required"}),
    ("/v1/completions", {"specula": {"grammar": 'root ::= [0-9]{3}'}}),
], ids=["gbnf", "json-object", "json-schema", "tool-required", "completions"])
def test_a_request_parses_its_grammar_once(tool_server: LocalServer, parses: list[bytes],
                                           path: str, body: dict[str, Any]) -> None:
    where = {"messages": ASK} if path.endswith("chat/completions") else {"prompt": "n ="}
    status, reply, _ = post(tool_server, path, {"model": "tiny-target", "max_tokens": 24,
                                                "temperature": 0, **where, **body})
    assert status == 200, reply
    assert len(parses) == 1, [p[:60] for p in parses]


def test_a_bad_grammar_is_still_a_400_from_its_one_parse(tool_server: LocalServer,
                                                         parses: list[bytes]) -> None:
    status, reply, _ = post(tool_server, "/v1/chat/completions", {
        "model": "tiny-target", "messages": ASK, "specula": {"grammar": "root ::= [unclosed"}})
    assert status == 400 and reply["error"]["param"] == "specula.grammar"
    assert reply["error"]["code"] == "invalid_grammar"
    assert len(parses) == 1


def test_a_negated_token_reference_is_a_400_not_an_abort(tool_server: LocalServer,
                                                           parses: list[bytes]) -> None:
    """llama.cpp admits "an" after "a" in this grammar, then aborts the process accepting
    it; the request is refused by name before llama.cpp sees it."""
    status, reply, _ = post(tool_server, "/v1/chat/completions", {
        "model": "tiny-target", "messages": ASK, "max_tokens": 8,
        "specula": {"grammar": 'root ::= "a" !<[5]> "z"'}})
    assert status == 400 and reply["error"]["param"] == "specula.grammar", reply
    assert "negated token references" in reply["error"]["message"] and not parses


def test_a_grammar_may_name_the_vocabulary_s_tokens(tool_server: LocalServer) -> None:
    """Parsed over the target's vocabulary only, a token reference resolves (a parse without
    a vocabulary, as the request's first check was, refuses it)."""
    status, reply, _ = post(tool_server, "/v1/chat/completions", {
        "model": "tiny-target", "messages": ASK, "max_tokens": 8, "temperature": 0,
        "specula": {"grammar": 'root ::= "x" <|im_start|> "y"'}})
    assert status == 200, reply


@pytest.fixture(scope="module")
def engine(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"])
    yield eng
    eng.close()


@pytest.mark.parametrize("mode", [Mode.PLAIN, Mode.CHAIN, Mode.TREE])
def test_an_engine_reply_parses_its_grammar_once(engine: Engine, parses: list[bytes],
                                                 mode: Mode) -> None:
    params = SamplingParams(temperature=0.0, max_tokens=40, grammar=GRAMMAR)
    spec = SpecConfig(mode=mode, draft_max=3)
    done = list(engine.chat(ASK, params, spec))[-1]
    assert isinstance(done, Done) and done.text in ("answer: yes.", "answer: no."), done.text
    assert len(parses) == 1
    parses.clear()
    state = engine.open_grammar(GRAMMAR)  # a caller that checked it first passes it on
    done = list(engine.generate_tokens(engine.tokenize_chat(ASK), params, spec, grammar=state))[-1]
    assert isinstance(done, Done) and done.text in ("answer: yes.", "answer: no."), done.text
    assert len(parses) == 1
