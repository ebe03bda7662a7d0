"""response_format and GBNF grammars through the official openai client, with a draft.

The tiny models are random: left alone they write byte soup. Every structured reply
below parses (and validates, with the independent ``jsonschema``) only because the
grammar held the target's choice at every position it verified, drafted or not.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from specula.server import LocalServer
from tests.server.conftest import post

MODEL = "tiny-target"
ASK = [{"role": "user", "content": "Describe the order as JSON."}]

SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {"type": "string", "maxLength": 16},
        "status": {"enum": ["new", "paid", "shipped"]},
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "integer"}, "country": {"enum": ["FR", "IT", "DE"]}},
            "required": ["zip", "country"], "additionalProperties": False,
        },
        "items": {"type": "array", "maxItems": 3, "items": {
            "type": "object", "properties": {"sku": {"type": "string", "maxLength": 8},
                                             "qty": {"type": "integer"}},
            "required": ["sku", "qty"], "additionalProperties": False}},
        "gift": {"type": "boolean"},
    },
    "required": ["customer", "status", "address", "items", "gift"],
    "additionalProperties": False,
}
RF_SCHEMA = {"type": "json_schema", "json_schema": {"name": "order", "schema": SCHEMA, "strict": True}}


def _chat(client: Any, **kw: Any) -> Any:
    args: dict[str, Any] = {"model": MODEL, "messages": ASK, "max_tokens": 400, "temperature": 0}
    args.update(kw)
    return client.chat.completions.create(**args)


def test_json_mode_replies_with_one_json_object(tool_client: Any) -> None:
    resp = _chat(tool_client, response_format={"type": "json_object"})
    choice = resp.choices[0]
    assert choice.finish_reason == "stop"  # the grammar completed: the reply ended there
    assert isinstance(json.loads(choice.message.content), dict)
    assert resp.model_extra["specula"]["drafted"] > 0  # and the draft took part


def test_a_schema_with_nested_objects_and_enums_validates(tool_client: Any) -> None:
    resp = _chat(tool_client, response_format=RF_SCHEMA)
    assert resp.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(resp.choices[0].message.content), SCHEMA)
    stats = resp.model_extra["specula"]
    assert stats["mode"] == "chain" and stats["accepted"] > 0


def test_without_the_grammar_the_same_request_is_not_json(tool_client: Any) -> None:
    """The control: the random model itself does not write JSON."""
    text = _chat(tool_client, max_tokens=60).choices[0].message.content
    with pytest.raises(ValueError):
        json.loads(text)


@pytest.mark.parametrize("mode", ["chain", "tree", "adaptive", "lookup"])
def test_every_mode_gives_plain_decodings_structured_reply(tool_client: Any, mode: str) -> None:
    plain = _chat(tool_client, response_format=RF_SCHEMA, extra_body={"specula": {"mode": "plain"}})
    other = _chat(tool_client, response_format=RF_SCHEMA, extra_body={"specula": {"mode": mode}})
    assert other.model_extra["specula"]["mode"] == mode
    assert other.choices[0].message.content == plain.choices[0].message.content
    jsonschema.validate(json.loads(other.choices[0].message.content), SCHEMA)


def test_seeded_sampling_keeps_the_schema_and_the_text_in_every_mode(tool_client: Any) -> None:
    kw = {"temperature": 0.9, "seed": 7, "response_format": RF_SCHEMA}
    plain = _chat(tool_client, **kw, extra_body={"specula": {"mode": "plain"}})
    chain = _chat(tool_client, **kw)
    assert chain.choices[0].message.content == plain.choices[0].message.content
    jsonschema.validate(json.loads(chain.choices[0].message.content), SCHEMA)


def test_a_streamed_schema_reply_is_the_whole_reply(tool_client: Any) -> None:
    whole = _chat(tool_client, response_format=RF_SCHEMA).choices[0].message.content
    chunks = list(_chat(tool_client, response_format=RF_SCHEMA, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    jsonschema.validate(json.loads(text), SCHEMA)


def test_a_gbnf_grammar_in_the_specula_field(tool_client: Any) -> None:
    grammar = 'root ::= "answer: " ("yes" | "no") "."'
    for stream in (False, True):
        resp = _chat(tool_client, stream=stream, extra_body={"specula": {"grammar": grammar}})
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in resp if c.choices)
        else:
            text = resp.choices[0].message.content
        assert text in ("answer: yes.", "answer: no.")


def test_completions_take_a_grammar_too(tool_client: Any) -> None:
    resp = tool_client.completions.create(model=MODEL, prompt="n =", max_tokens=20, temperature=0,
                                          extra_body={"specula": {"grammar": 'root ::= [0-9]{3}'}})
    assert len(resp.choices[0].text) == 3 and resp.choices[0].text.isdigit()


@pytest.mark.parametrize(("body", "param"), [
    ({"response_format": {"type": "yaml"}}, "response_format.type"),
    ({"response_format": "json"}, "response_format"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
     "response_format.json_schema.name"),
    ({"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "not": {"required": ["a"]}}}}},
     "response_format.json_schema.schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}},
     "response_format.json_schema.schema"),
    ({"specula": {"grammar": "root ::= [unclosed"}}, "specula.grammar"),
    ({"specula": {"grammar": 'start ::= "x"'}}, "specula.grammar"),  # no root rule
    ({"specula": {"grammar": 42}}, "specula.grammar"),
    ({"specula": {"grammar": 'root ::= "x"'}, "response_format": {"type": "json_object"}},
     "specula.grammar"),
])
@pytest.mark.parametrize("stream", [False, True])
def test_bad_structure_is_a_400_naming_the_field_before_any_token(
        tool_server: LocalServer, body: dict[str, Any], param: str, stream: bool) -> None:
    status, reply, headers = post(tool_server, "/v1/chat/completions",
                                  {"model": MODEL, "messages": ASK, "stream": stream, **body})
    assert status == 400, reply
    assert reply["error"]["param"] == param
    assert headers["Content-Type"] == "application/json"  # not a stream that started
