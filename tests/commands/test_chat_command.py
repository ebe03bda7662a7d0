"""`specula chat` as a user runs it: a real process, bytes on stdin, the tiny models.

Each case crashed the session before: invalid UTF-8 on stdin (UnicodeEncodeError),
``--seed -1`` (a negative seed reached the sampler), a template that refuses a
message (the session ended), a template that does not compile (a Jinja traceback).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specula_tools.tiny_models import CHATML_TEMPLATE, TARGET, build_tiny_model

APP = Path(__file__).resolve().parents[2] / "app"
REFUSING = (
    "{% for m in messages %}{% if 'boom' in m.content %}"
    "{{ raise_exception('this template refuses boom') }}{% endif %}{% endfor %}" + CHATML_TEMPLATE
)
STATS = re.compile(r"^\[.*tok/s.*\]$", re.MULTILINE)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("chat-models")
    return {
        "refusing": build_tiny_model(folder / "refusing.gguf", replace(TARGET, chat_template=REFUSING)),
        "broken": build_tiny_model(folder / "broken.gguf", replace(TARGET, chat_template="{% for %}")),
        "runaway": build_tiny_model(folder / "runaway.gguf", replace(
            TARGET, chat_template="{% for i in range(100000) %}{% for j in range(100000) %}"
            "{% endfor %}{% endfor %}")),
    }


def chat(model: Path, stdin: bytes, *args: str, home: Path) -> tuple[int, str, str]:
    """Exit code, stdout and stderr (decoded with replacement, as a terminal shows them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIO"))}
    # The C locale: stdin is decoded as ASCII with surrogateescape, the hardest case.
    env.update(PYTHONPATH=str(APP), SPECULA_HOME=str(home), LC_ALL="C", PYTHONUTF8="0")
    code = "import sys; from specula.cli import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run(
        [sys.executable, "-c", code, "chat", "--model", str(model), "--max-tokens", "4",
         "--threads", "1", *args],
        input=stdin, capture_output=True, env=env, timeout=120, check=False,
    )
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def test_invalid_utf8_on_stdin_is_replaced(tiny: dict[str, Path], specula_home: Path) -> None:
    code, _out, err = chat(tiny["target"], b"hello \xff\xfe world \xe2\x82\n/quit\n",
                           home=specula_home)
    assert code == 0, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert len(STATS.findall(err)) == 1  # the reply ran


def test_seed_minus_one_draws_a_fresh_seed_and_shows_it(tiny: dict[str, Path],
                                                        specula_home: Path) -> None:
    code, _out, err = chat(tiny["target"], b"hello\nhello again\n", "--seed", "-1", "--temp", "0.8",
                           home=specula_home)
    assert code == 0, err
    seeds = re.findall(r", seed (\d+)\]", err)
    assert len(seeds) == 2, err  # one per reply
    assert all(0 <= int(s) < 2**31 for s in seeds)


def test_a_template_error_is_shown_and_the_session_goes_on(models: dict[str, Path],
                                                           specula_home: Path) -> None:
    code, _out, err = chat(models["refusing"], b"boom\nhello\n", home=specula_home)
    assert code == 0, err
    assert "this template refuses boom" in err and "Traceback" not in err
    assert len(STATS.findall(err)) == 1  # "hello" was answered after the refusal


def test_a_runaway_template_ends_with_a_message(models: dict[str, Path], specula_home: Path) -> None:
    code, _out, err = chat(models["runaway"], b"hello\n", home=specula_home)
    assert code == 0, err
    assert "chat template: rendering took more than" in err and "Traceback" not in err


def test_a_template_that_does_not_compile_is_a_load_error(models: dict[str, Path],
                                                          specula_home: Path) -> None:
    code, _out, err = chat(models["broken"], b"hello\n", home=specula_home)
    assert code == 2, err
    assert "specula: error:" in err and "does not compile" in err and "Traceback" not in err


@pytest.mark.parametrize(("line", "clean"), [
    ("a\udcff\udcfeb", "a\ufffd\ufffdb"),  # invalid bytes, as surrogateescape decodes them
    ("x\ud800y", "x?y"),  # a lone surrogate no decoder made
    ("h\u00e9llo \u6a21\u578b", "h\u00e9llo \u6a21\u578b"),
])
def test_clean_line(line: str, clean: str) -> None:
    from specula.commands.chat import clean_line

    assert clean_line(line) == clean
    clean_line(line).encode("utf-8")  # never raises
