"""Short human sentences for a compatibility report: one per failed check.

:func:`specula.core.gguf.compat.check` words each check for someone who knows
tokenizers ("BOS differs: target add_bos=False id 151643 ..."). A refusal in
the app is read by someone who chose two files; they need to know, in one
line each, what does not match and what to do. The technical wording stays
available as the details.
"""

from __future__ import annotations

from specula.core.gguf.compat import Check, CompatReport

_SENTENCES = {
    "tokenizer": "One of the files has no tokenizer, so its tokens cannot be compared.",
    "vocab_type": "The two models use different kinds of tokenizer.",
    "bos": "They begin a text with a different start token.",
    "eos": "They end a text with a different end token.",
    "vocab_size": "Their vocabularies differ too much in size.",
    "token_text": "The same token numbers stand for different text.",
    "pre_tokenizer": "They split text into words differently, so fewer drafts are accepted.",
    "merges": "Their tokenizers merge characters differently, so fewer drafts are accepted.",
    "token_types": "Some special tokens are marked differently.",
    "eot": "They mark the end of a turn with different tokens.",
}

ADVICE = "Pick a draft from the same model family as the target (same tokenizer)."


def sentence(check: Check) -> str:
    """The human sentence for one failed check (its own message when the name is new)."""
    return _SENTENCES.get(check.name, check.message)


def refusal_sentences(report: CompatReport) -> list[str]:
    """One sentence per blocking failure, in the report's order (empty when usable)."""
    return [sentence(c) for c in report.failures]


def details(report: CompatReport) -> str:
    """The technical text: each failed or warned check's own message, one per line."""
    failed = [c for c in report.checks if not c.passed]
    return "\n".join(f"{c.name}: {c.message}" for c in failed)
