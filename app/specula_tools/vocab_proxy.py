"""A stand-in for GPU step times: tiny compute, a real-size vocabulary.

A generated llama model with 151,600 extra tokens (152k in all, Qwen2.5's size),
n_embd 64, n_ff 256 and 4 layers decodes in a few milliseconds on one CPU core, most of it
in the output matrix: about what a 7B step costs on a GPU. The host's work per token
(sampling, the draft's features, bookkeeping) scales with the vocabulary, so its share
of a step here is what it would be beside a fast accelerator. The draft is the same
model with noise on every weight (accepted part of the time).

    python -m specula_tools.vocab_proxy [FOLDER] [--n-embd N]   # builds once, prints the paths
    specula bench --target FOLDER/proxy-152k.gguf --draft FOLDER/proxy-152k-draft.gguf ...

On a fast CPU core the issue's shape decodes in ~1.5 ms, not the ~4 ms it was measured at
elsewhere; ``--n-embd 160`` (in another folder) makes the output matrix 2.5x larger and the
decode ~3.7 ms here, so the host share can also be read at that step time.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from specula_tools.tiny_models import TARGET, build_tiny_model

PROXY = replace(TARGET, name="proxy-152k", extra_tokens=151_600, n_embd=64, n_ff=256, n_layers=4)
PROXY_DRAFT = replace(PROXY, name="proxy-152k-draft", noise=0.03)
DEFAULT_FOLDER = Path("/tmp/specula-vocab-proxy")


def build_proxy(folder: str | Path = DEFAULT_FOLDER, n_embd: int = PROXY.n_embd) -> tuple[Path, Path]:
    """(target, draft) under ``folder``, built only when missing (each ~80 MB, ~3 s, at the
    default ``n_embd``; the files do not say their width, so one folder per width)."""
    folder = Path(folder)
    out = []
    for spec in (replace(PROXY, n_embd=n_embd), replace(PROXY_DRAFT, n_embd=n_embd)):
        path = folder / f"{spec.name}.gguf"
        if not path.is_file():
            tmp = path.with_suffix(".part")
            build_tiny_model(tmp, spec)
            tmp.replace(path)
        out.append(path)
    return out[0], out[1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(DEFAULT_FOLDER))
    ap.add_argument("--n-embd", type=int, default=PROXY.n_embd,
                    help="width of the model (160: a ~3.7 ms decode on one core here)")
    a = ap.parse_args(argv)
    for path in build_proxy(a.folder, a.n_embd):
        print(path)


if __name__ == "__main__":
    main()
