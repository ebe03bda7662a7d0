"""The model bar's rows and status line, worked out without Qt (gui/chat/draft_list.py)."""

from __future__ import annotations

from dataclasses import MISSING, fields

from specula.core.gguf.model_info import ModelInfo
from specula.gui.chat.draft_list import BUILTIN_MTP, DraftEntry, draft_rows, status_text

NBSP = "\u00a0"


def info(source: str, name: str, arch: str, size: str, quant: str) -> ModelInfo:
    kw: dict[str, object] = {f.name: None for f in fields(ModelInfo)
                             if f.default is MISSING and f.default_factory is MISSING}
    kw.update(source=source, name=name, architecture=arch, size_label=size, quantization=quant,
              has_chat_template=True, gguf_version=3, file_size=1000)
    return ModelInfo(**kw)  # type: ignore[arg-type]


GOOD = DraftEntry("/m/small.gguf", "Small", True, "Compatible.", detail="0.5B · Q4_0")
BAD = DraftEntry("/m/other.gguf", "Other", False, "Different tokenizers.",
                 short="The two models use different kinds of tokenizer", detail="1B · Q8_0")


def test_the_builtin_head_comes_first_and_is_chosen_while_on() -> None:
    rows, select = draft_rows([GOOD], n_mtp=2, builtin_on=True, current="")
    assert [(r.text, r.path) for r in rows] == [
        ("Built-in (MTP, 2 layers)", BUILTIN_MTP), ("No draft", ""),
        ("Small  0.5B · Q4_0", "/m/small.gguf")]
    assert select == 0
    _rows, select = draft_rows([GOOD], n_mtp=1, builtin_on=False, current="")
    assert _rows[0].text == "Built-in (MTP, 1 layer)" and select == 1  # "No draft"


def test_the_current_usable_file_is_chosen_and_a_refused_one_never() -> None:
    rows, select = draft_rows([BAD, GOOD], n_mtp=0, builtin_on=True, current="/m/small.gguf")
    assert [r.path for r in rows] == ["", "/m/other.gguf", "/m/small.gguf"]
    assert select == 2
    refused = rows[1]
    assert refused.text == "Other  1B · Q8_0  — incompatible: The two models use different kinds of tokenizer"
    assert refused.usable is False and refused.detail == "incompatible"
    assert refused.tooltip == "/m/other.gguf\nDifferent tokenizers."
    _rows, select = draft_rows([BAD, GOOD], n_mtp=0, builtin_on=True, current="/m/other.gguf")
    assert select == 0  # "No draft": a refused file is never shown as chosen


def test_the_status_line_names_each_model_on_its_own_line() -> None:
    target = info("/m/t.gguf", "Qwen2.5 7B Instruct", "qwen2", "7B", "Q4_K_M")
    draft = info("/m/d.gguf", "Qwen2.5 0.5B Instruct", "qwen2", "0.5B", "Q8_0")
    head = f"Target: Qwen2.5 7B Instruct{NBSP}· qwen2{NBSP}· 7B{NBSP}· Q4_K_M{NBSP}· on CPU, 4 threads"
    assert status_text(None, "CPU", 4) == "No model loaded. Open a GGUF file to start."
    assert status_text(target, "CPU", 4) == head + "\nNo draft"
    assert status_text(target, "CPU", 4, draft=draft) == \
        head + f"\nDraft: Qwen2.5 0.5B Instruct{NBSP}· qwen2{NBSP}· 0.5B{NBSP}· Q8_0"
    assert status_text(target, "CPU", 4, draft=draft, pending_draft="Small") == \
        head + "\nDraft: loading Small…"  # the new draft, not the one it replaces
    assert status_text(target, "CPU", 4, builtin_layers=3) == head + "\nDraft: Built-in (MTP, 3 layers)"
