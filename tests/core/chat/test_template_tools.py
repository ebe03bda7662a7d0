"""Qwen2.5's own chat template renders tools, assistant tool calls and tool results.

The template is the one in Qwen2.5-Coder-1.5B-Instruct's GGUF (a copy in
tests/fixtures; the real_models test checks the copy against the file). The
expected prompts are written out by hand from the format the template documents.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.chat.template import ChatTemplate
from specula.core.chat.tool_calls import HERMES
from tests.conftest import real_model

QWEN = (Path(__file__).parents[2] / "fixtures" / "qwen25_chat_template.jinja").read_text()

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]

SYSTEM_WITH_TOOLS = (
    "<|im_start|>system\nYou are terse.\n\n# Tools\n\nYou may call one or more functions to "
    "assist with the user query.\n\nYou are provided with function signatures within "
    "<tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "get_weather", "description": "Weather for a '
    'city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, '
    '"required": ["city"]}}}\n</tools>\n\nFor each function call, return a json object with '
    "function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call><|im_end|>\n'
)


def _template() -> ChatTemplate:
    return ChatTemplate(QWEN, "", "<|im_end|>", False)


def test_the_template_speaks_the_hermes_format() -> None:
    assert _template().tool_format is HERMES


def test_tools_reach_the_template() -> None:
    msgs = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"}]
    text = _template().render(msgs, TOOLS)
    assert text == SYSTEM_WITH_TOOLS + (
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")


def test_without_tools_the_prompt_has_no_tools_section() -> None:
    text = _template().render([{"role": "user", "content": "hi"}])
    assert text == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
                    "helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                    "<|im_start|>assistant\n")


def test_a_call_and_its_result_render_in_the_history() -> None:
    msgs = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"id": "b", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
        {"role": "tool", "tool_call_id": "a", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "b", "content": '{"temp": 25}'},
    ]
    text = _template().render(msgs, TOOLS)
    assert text == SYSTEM_WITH_TOOLS + (
        "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
        "<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n"
        "<tool_response>\n{\"temp\": 25}\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")


@pytest.mark.real_models
def test_the_fixture_is_the_real_models_template() -> None:
    import gguf

    reader = gguf.GGUFReader(real_model("qwen-1.5b"))
    field = reader.fields["tokenizer.chat_template"]
    assert bytes(field.parts[field.data[0]]).decode() == QWEN
