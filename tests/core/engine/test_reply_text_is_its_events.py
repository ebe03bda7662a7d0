"""One text for a reply: ``Done.text`` is exactly the text of its token events, also when
the reply ends inside a UTF-8 character (the token limit cut it there).

Every surface builds the reply from one of the two (the stream, `specula chat`'s
display and the GUI's bubble from the events; the non-streamed reply, the saved
history and the GUI's stored message from ``Done.text``), so they agree exactly when
these agree. The expected text is computed here from the tokens' bytes with the
standard library's decoder: the bytes of a character the reply never finished are not
text, and no U+FFFD stands in for them.
"""

from __future__ import annotations

import codecs

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, chain, run

PROMPTS = ["hello world", "the code and the model", "lorem ipsum zebra quartz", "zebra"]


def _cut_inside_a_character(engine: Engine) -> tuple[str, int, bytes]:
    """A prompt and a token count after which the greedy reply's bytes end inside a
    character (a lead byte whose continuation the next token brings), and those bytes."""
    model = engine.target_model
    assert model is not None
    for prompt in PROMPTS:
        done, _ = run(engine, prompt, SamplingParams(max_tokens=120), PLAIN)
        data = b""
        for i, tok in enumerate(done.token_ids):
            data += model.piece(tok)
            dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
            dec.decode(data)
            if dec.getstate()[0]:  # bytes held back: an unfinished character
                return prompt, i + 1, data
    raise AssertionError("no greedy reply of the tiny target ends a token inside a character")


@pytest.mark.parametrize("spec", [PLAIN, chain(3), SpecConfig(mode=Mode.TREE, draft_max=3)],
                         ids=["plain", "chain", "tree"])
def test_a_reply_cut_inside_a_character_has_one_text(engine: Engine, spec: SpecConfig) -> None:
    prompt, n, data = _cut_inside_a_character(engine)
    done, events = run(engine, prompt, SamplingParams(max_tokens=n), spec)
    assert len(done.token_ids) == n
    want = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data)  # not final
    assert "".join(e.text for e in events) == want
    assert done.text == want

