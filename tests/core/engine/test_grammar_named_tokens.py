"""A grammar that names a token right after text its own text starts with
(``"<" <|im_start|>``): llama.cpp admits the named token where the '<' is due and then
aborts the process accepting it. The named token is checked before it is admitted, the
grammar still works where it names tokens plainly, and a reply under such a grammar ends
normally."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.grammar import state as G
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import run

AFTER_TEXT = 'root ::= "<" <|im_start|>'


def _ids(model: Model) -> tuple[int, int]:
    (im,) = model.tokenize("<|im_start|>", add_special=False, parse_special=True)
    (lt,) = model.tokenize("<", add_special=False, parse_special=False)
    return im, lt


def test_the_named_token_is_refused_where_its_first_character_is_due(tiny: dict[str, Path]) -> None:
    model = Model(tiny["target"], vocab_only=True)
    try:
        im, lt = _ids(model)
        st = G.GrammarState.open(model.vocab, model.n_vocab, AFTER_TEXT)
        assert not st.allows(im) and st.allows(lt)  # llama.cpp alone says yes to both
        assert im not in set(st.allowed_all(model.n_vocab).tolist())
        st.advance(lt)
        assert st.allows(im)  # where the reference itself is due, it is the token
        st.advance(im)
        st.close()
        plain = G.GrammarState.open(model.vocab, model.n_vocab, 'root ::= <|im_start|> "x" | "y"')
        assert plain.allows(im) and not plain.allows(lt)
        plain.advance(im)
        plain.close()
    finally:
        model.close()


@pytest.mark.parametrize("temperature", [0.0, 1.5])
def test_a_reply_under_such_a_grammar_ends_normally(engine: object, temperature: float) -> None:
    for seed in range(4):
        params = SamplingParams(temperature=temperature, seed=seed, max_tokens=8, grammar=AFTER_TEXT)
        done, _ = run(engine, "hello", params, SpecConfig(mode=Mode.CHAIN, draft_max=2))  # type: ignore[arg-type]
        assert done.stop_reason.value in ("eos", "max_tokens"), done
        assert done.text.startswith("<")


def test_without_the_check_llama_cpp_aborts_the_process(tiny: dict[str, Path]) -> None:
    """The check's power: with it switched off the same acceptance kills the process
    (llama.cpp throws through C). Run in a child process."""
    code = textwrap.dedent(f"""
        from specula.core.engine.grammar import state as G
        from specula.core.engine.native.llama import Model
        m = Model({str(tiny["target"])!r}, vocab_only=True)
        (im,) = m.tokenize("<|im_start|>", add_special=False, parse_special=True)
        st = G.GrammarState.open(m.vocab, m.n_vocab, {AFTER_TEXT!r})
        st._refs = frozenset()
        st.advance(im)
        print("survived")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "survived" not in out.stdout
    assert "Unexpected empty grammar stack" in out.stderr
