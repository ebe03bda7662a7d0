"""A stand-in for GPU step times: tiny compute, a real-size vocabulary.

A generated llama model with 151,600 extra tokens (152k in all, Qwen2.5's size),
n_embd 64, n_ff 256 and 4 layers decodes in a few milliseconds on one CPU core, most of it
in the output matrix: about what a 7B step costs on a GPU. The host's work per token
(sampling, the draft's features, bookkeeping) scales with the vocabulary, so its share
of a step here is what it would be beside a fast accelerator. The draft is the same
model with noise on every weight (accepted part of the time).

    python -m specula.tools.vocab_proxy [FOLDER]     # builds once, prints the two paths
    specula bench --target FOLDER/proxy-152k.gguf --draft FOLDER/proxy-152k-draft.gguf ...
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from specula.tools.tiny_models import TARGET, build_tiny_model

PROXY = replace(TARGET, name="proxy-152k", extra_tokens=151_600, n_embd=64, n_ff=256, n_layers=4)
PROXY_DRAFT = replace(PROXY, name="proxy-152k-draft", noise=0.03)
DEFAULT_FOLDER = Path("/tmp/specula-vocab-proxy")


def build_proxy(folder: str | Path = DEFAULT_FOLDER) -> tuple[Path, Path]:
    """(target, draft) under ``folder``, built only when missing (each ~80 MB, ~3 s)."""
    folder = Path(folder)
    out = []
    for spec in (PROXY, PROXY_DRAFT):
        path = folder / f"{spec.name}.gguf"
        if not path.is_file():
            tmp = path.with_suffix(".part")
            build_tiny_model(tmp, spec)
            tmp.replace(path)
        out.append(path)
    return out[0], out[1]




if __name__ == "__main__":
    target, draft = build_proxy(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_FOLDER)
    print(target)
    print(draft)
