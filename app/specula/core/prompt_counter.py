"""Prompt tokens counted beside the engine: the target's vocabulary and chat template only.

The chat counts tokens while the user types (the composer's counter) and
fits a conversation into the context before a reply (:mod:`specula.core.chat.overflow`)
without asking the engine thread, which may be busy with a reply. A
vocabulary-only load of the target (no weights: tens of milliseconds for a
152k vocabulary) gives the same tokens and the same template as the engine,
so the counts are the engine's own; counting a message takes about a
millisecond.

Build it off the GUI thread; one instance is used from one thread at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specula.core.chat.template import ChatTemplate
from specula.core.engine.native.llama import Model


class PromptCounter:
    def __init__(self, model_path: str | Path) -> None:
        self.source = str(model_path)
        self._model = Model(model_path, vocab_only=True)
        try:
            self._template = ChatTemplate.for_model(self._model)
        except Exception:
            self._model.close()
            raise

    def count(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The prompt tokens of ``messages`` as the engine builds them (template included)."""
        return len(self._template.tokenize(self._model, messages))

    def count_text(self, text: str) -> int:
        """The tokens of a piece of text on its own (no template, no special tokens)."""
        return len(self._model.tokenize(text, add_special=False, parse_special=False)) if text else 0

    def close(self) -> None:
        self._model.close()
