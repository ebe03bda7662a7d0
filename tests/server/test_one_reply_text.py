"""One text for a reply on the server: a reply that the token limit cuts inside a UTF-8
character reads the same streamed and whole, on chat and completions, and its
log-probabilities list every token it counts.

Where to cut is found from the reply's own token bytes (chat logprobs), decoded here
with the standard library: after a token that leaves a character unfinished.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

from specula.core.chat.template import ChatTemplate
from specula.core.engine.native.llama import Model

MODEL = "tiny-target"
PROMPTS = ["hello world", "the code and the model", "lorem ipsum zebra quartz", "zebra"]


def _unfinished(token_bytes: list[bytes]) -> int | None:
    """The count of tokens after which the bytes end inside a character, or None."""
    data = b""
    for i, b in enumerate(token_bytes):
        data += b
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        dec.decode(data)
        if dec.getstate()[0]:
            return i + 1
    return None


def _cut(client: Any) -> tuple[list[dict[str, str]], int, str]:
    """Messages, a max_tokens that ends the greedy reply inside a character, and the
    reply's text up to the last whole character."""
    for prompt in PROMPTS:
        msgs = [{"role": "user", "content": prompt}]
        r = client.chat.completions.create(model=MODEL, messages=msgs, max_tokens=120,
                                           temperature=0, logprobs=True, top_logprobs=0)
        token_bytes = [bytes(e.bytes) for e in r.choices[0].logprobs.content]
        n = _unfinished(token_bytes)
        if n is not None:
            data = b"".join(token_bytes[:n])
            return msgs, n, codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data)
    raise AssertionError("no greedy reply of the tiny target stops a token inside a character")


def test_a_chat_reply_cut_inside_a_character_reads_the_same_streamed_and_whole(client: Any) -> None:
    msgs, n, want = _cut(client)
    kw: dict[str, Any] = {"model": MODEL, "messages": msgs, "max_tokens": n, "temperature": 0,
                          "logprobs": True, "top_logprobs": 0}
    whole = client.chat.completions.create(**kw)
    assert whole.usage.completion_tokens == n and whole.choices[0].finish_reason == "length"
    chunks = list(client.chat.completions.create(**kw, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert whole.choices[0].message.content == streamed == want
    # every counted token has its entry, the unfinished character's included
    assert len(whole.choices[0].logprobs.content) == n
    assert sum(len(c.choices[0].logprobs.content) for c in chunks
               if c.choices and c.choices[0].logprobs) == n


def test_a_completion_cut_inside_a_character_reads_the_same_streamed_and_whole(
        client: Any, tiny: dict[str, Path]) -> None:
    """The same prompt tokens as the chat's, given to /v1/completions as token ids."""
    msgs, n, want = _cut(client)
    model = Model(tiny["target"], vocab_only=True)
    try:
        ids = ChatTemplate.for_model(model).tokenize(model, msgs)
    finally:
        model.close()
    kw: dict[str, Any] = {"model": MODEL, "prompt": ids, "max_tokens": n, "temperature": 0}
    whole = client.completions.create(**kw).choices[0]
    streamed = "".join(c.choices[0].text for c in client.completions.create(**kw, stream=True)
                       if c.choices)
    assert whole.finish_reason == "length"
    assert whole.text == streamed == want
