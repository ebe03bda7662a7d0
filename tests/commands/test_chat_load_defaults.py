"""`specula chat --model X` takes X's saved load defaults for what is not on the command line,
and a long terminal chat goes on by leaving its middle out."""

from __future__ import annotations

from pathlib import Path

from specula.core.library.load_defaults import LoadDefaults, save_defaults
from tests.commands.test_chat_command import chat


def test_model_defaults_fill_what_is_not_given(tiny: dict[str, Path], specula_home: Path) -> None:
    save_defaults(tiny["target"], LoadDefaults(n_ctx=256, draft=str(tiny["draft"]), mode="chain"))
    code, _out, err = chat(tiny["target"], b"hi\n/stats\n/quit\n", home=specula_home)
    assert code == 0, err
    assert f"model defaults: ctx 256, draft {tiny['draft']}, mode chain" in err
    assert "loading draft" in err and "chain" in err
    # Given on the command line, an option wins over the model's default.
    code, _out, err = chat(tiny["target"], b"/quit\n", "--ctx", "512", "--mode", "plain",
                           home=specula_home)
    assert code == 0, err
    assert "model defaults: draft" in err and "ctx 256" not in err and "mode chain" not in err


def test_a_chat_longer_than_the_context_goes_on(tiny: dict[str, Path], specula_home: Path) -> None:
    save_defaults(tiny["target"], LoadDefaults(n_ctx=128))
    lines = b"".join(b"message number %d with some words in it\n" % i for i in range(12))
    code, _out, err = chat(tiny["target"], lines + b"/quit\n", home=specula_home)
    assert code == 0, err
    assert "earlier messages left out of the context:\n  #3 user: message number 1" in err  # the first turn kept
    assert "does not fit" not in err and "error" not in err


def test_serve_takes_the_defaults_too(tmp_path: Path) -> None:
    import argparse

    from specula.commands import serve
    from specula.commands._load_defaults import apply_load_defaults

    model = tmp_path / "m.gguf"
    save_defaults(model, LoadDefaults(n_ctx=8192, gpu_layers=-1, threads=3, mode="lookup"))
    p = argparse.ArgumentParser()
    serve.add_arguments(p)
    a = p.parse_args(["--model", str(model), "--threads", "2"])
    apply_load_defaults(a, quiet=True)
    assert (a.ctx, a.gpu_layers, a.threads, a.mode, a.draft) == (8192, -1, 2, "lookup", None)
    plain = p.parse_args(["--model", str(tmp_path / "other.gguf")])
    apply_load_defaults(plain, quiet=True)
    assert (plain.ctx, plain.gpu_layers, plain.threads, plain.mode) == (4096, "auto", None, None)
