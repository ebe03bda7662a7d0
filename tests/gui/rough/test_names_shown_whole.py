"""Names are never cut to nothing (issue 45, item 9): the pickers keep a model's start and its
size and quantization, with the whole text as a tooltip; a copied chat keeps "(copy)" in
view; two sizes of one family read apart in My Models; Discover's pairs of one family in
two quantizations have two titles."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication

from specula.core.chat.conversations import ConversationStore
from specula.core.pairing.suggestions import End, SuggestedPair
from specula.gui.chat.conversation_list import ConversationList
from specula.gui.chat.model_pickers import PICKER_MIN_WIDTH, _combo
from specula.gui.elided import DETAIL_ROLE, shown_with_detail
from specula.gui.models.suggestions_panel import pair_label

NAME, DETAIL = "Qwen2.5 Coder 1.5B Instruct", "1.5B · Q4_K_M"


# The offscreen platform cannot raise the tooltip's window; a desktop can.
@pytest.mark.qt_log_ignore("does not support raise")
def test_the_picker_keeps_the_names_start_and_the_whole_detail(qtbot) -> None:  # type: ignore[no-untyped-def]
    combo = _combo(None)  # type: ignore[arg-type]
    qtbot.addWidget(combo)
    combo.addItem(f"{NAME}  {DETAIL}")
    combo.setItemData(0, DETAIL, DETAIL_ROLE)
    combo.setItemData(0, "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                      Qt.ItemDataRole.ToolTipRole)
    combo.setCurrentIndex(0)
    combo.show()
    combo.resize(PICKER_MIN_WIDTH, combo.height())  # as narrow as the header lets it be
    shown = combo.shown_text()
    assert shown.startswith("Qwen2") and shown.endswith("…  1.5B"), shown
    combo.resize(300, combo.height())  # room for the whole detail
    shown = combo.shown_text()
    assert shown.endswith(f"  {DETAIL}") and shown.startswith("Qwen2.5 Coder"), shown
    point = QPoint(5, 5)
    QApplication.sendEvent(combo, QHelpEvent(QEvent.Type.ToolTip, point, combo.mapToGlobal(point)))
    assert combo.toolTip() == (f"{NAME}  {DETAIL}\n"
                               "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")


def test_shown_with_detail_gives_up_the_quantization_before_the_name() -> None:
    def advance(text: str) -> int:
        return len(text)  # one "pixel" per character: the arithmetic is checked by hand

    def elide(text: str, room: int) -> str:
        return text if len(text) <= room else text[: max(room - 1, 0)] + "…"

    assert shown_with_detail(NAME, DETAIL, 60, advance, elide) == f"{NAME}  {DETAIL}"
    # 26 columns: "  1.5B · Q4_K_M" (15) leaves 11 >= len("Qwen2…") = 6
    assert shown_with_detail(NAME, DETAIL, 26, advance, elide) == "Qwen2.5 Co…  1.5B · Q4_K_M"
    # 18 columns: the whole detail would leave 3; the size alone ("  1.5B", 6) leaves 12
    assert shown_with_detail(NAME, DETAIL, 18, advance, elide) == "Qwen2.5 Cod…  1.5B"
    assert shown_with_detail(NAME, DETAIL, 12, advance, elide) == "Qwen2…  1.5B"
    # 10 columns: the size leaves 4 < 6: the detail alone
    assert shown_with_detail(NAME, DETAIL, 10, advance, elide) == "1.5B · Q4…"


def test_a_copied_chat_keeps_copy_in_view(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = ConversationStore(tmp_path / "c.sqlite3")
    source = store.create("How do I make speculative decoding faster on a laptop")
    chats = ConversationList(store)
    qtbot.addWidget(chats)
    chats.resize(200, 400)
    chats.show()
    copy_id = chats.duplicate(source.id)
    item = chats.item_for(copy_id)
    assert item is not None and item.text().endswith("(copy)")
    width = chats.list.visualItemRect(item).width()
    shown = chats.list.fontMetrics().elidedText(item.text(), chats.list.textElideMode(), width)
    assert shown != item.text(), "the title is long enough to be cut at this width"
    assert shown.endswith("(copy)"), shown
    store.close()


def test_discovers_pairs_of_one_family_in_two_quantizations_read_apart() -> None:
    def pair(quant: str) -> SuggestedPair:
        target = End("Qwen2.5 Coder 1.5B Instruct",
                     f"Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-"
                     f"{quant}.gguf", "hub", 1)
        draft = End("Qwen2.5 Coder 0.5B Instruct",
                    "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct-q8_0.gguf",
                    "hub", 1)
        return SuggestedPair(target, draft, "popular on the hub")

    q4, f16 = pair_label(pair("q4_k_m")), pair_label(pair("fp16"))  # Qwen's own file names
    assert f16 == "Qwen2.5 Coder 1.5B Instruct F16 + Qwen2.5 Coder 0.5B Instruct Q8_0"
    assert q4 == "Qwen2.5 Coder 1.5B Instruct Q4_K_M + Qwen2.5 Coder 0.5B Instruct Q8_0"
