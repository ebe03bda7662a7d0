"""The user's own files never stop the app (issue 46, defects 4, 5, 7 and 8 in the GUI).

Before: a message's stored ``{"tokens": 5}``, ``{"stats": "fast"}`` or 100,000 ``[``
raised when the chat page showed it (SIGABRT after a dialog that said "Specula keeps
running"); a locked database was set aside as damaged; a deep ``presets.json``
aborted; importing presets rewrote the whole file once per preset on the GUI thread.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from specula.core import paths
from specula.core.chat import conversations, presets
from specula.core.chat.conversations import DB_NAME, ConversationStore
from specula.gui import errors

BAD_META = ['{"tokens": 5}', '{"tokens": [1, 2]}', '{"stats": "fast"}', "[" * 100_000,
            '{"versions": [{"content": 1}], "version": 0}']


@pytest.mark.parametrize("meta", BAD_META, ids=["tokens-5", "tokens-1-2", "stats-text", "deep",
                                                "versions"])
def test_a_damaged_message_is_shown_and_the_chat_goes_on(meta: str, make_window) -> None:  # type: ignore[no-untyped-def]
    store = ConversationStore()
    cid = store.create("chat").id
    store.add_message(cid, "user", "question")
    store.add_message(cid, "assistant", "answer", {"stop_reason": "eos"})
    store.close()
    db = sqlite3.connect(paths.data_dir() / DB_NAME)
    with db:
        db.execute("UPDATE messages SET meta = ? WHERE position = 1", (meta,))
        db.execute("UPDATE conversations SET settings = ?", ("[" * 100_000,))
    db.close()
    w = make_window()
    page = w.chat
    page.open_conversation(cid)
    assert page.conversation_id == cid
    question, answer = page.transcript.messages
    assert (question.text, answer.text) == ("question", "answer")
    assert answer.footer.text().startswith("Damaged: ") and question.footer.text() == ""
    assert page.ctx.store.chat_settings(cid) == {}


def test_a_locked_database_at_start_is_named_in_use_not_damaged(  # type: ignore[no-untyped-def]
        make_window, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversations, "BUSY_TIMEOUT_S", 0.01)
    path = paths.data_dir() / DB_NAME
    ConversationStore(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        w = make_window()
        assert w.isVisible()
        shown = "\n".join(errors.shown_errors)
        assert "in use by another program" in shown and "damaged" not in shown
        assert sorted(p.name for p in path.parent.glob(DB_NAME + "*")) == [DB_NAME]
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_deep_presets_file_at_start_is_set_aside_and_named(make_window) -> None:  # type: ignore[no-untyped-def]
    path = paths.config_dir() / presets.FILE_NAME
    path.write_text("[" * 100_000)
    w = make_window()
    assert w.isVisible()
    (aside,) = path.parent.glob("presets.json.bad-*")
    assert str(aside) in "\n".join(errors.shown_errors)


def test_presets_are_imported_in_one_write_off_the_gui_thread(  # type: ignore[no-untyped-def]
        make_window, qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specula.gui.chat.presets_dialog import PresetsDialog

    w = make_window()
    dialog = PresetsDialog(w.chat.settings_panel)
    qtbot.addWidget(dialog)
    many = [presets.Preset(f"p{i}", values={"top_k": i % 100}) for i in range(300)]
    source = tmp_path / "many.json"
    source.write_text('{"presets": [' + ", ".join(presets.export_json(p) for p in many) + "]}")
    writes: list[threading.Thread] = []
    real = presets.save_user

    def counted(items: list[presets.Preset], path: Path | None = None) -> None:
        writes.append(threading.current_thread())
        real(items, path)

    monkeypatch.setattr(presets, "save_user", counted)
    with qtbot.waitSignal(dialog.presets_imported, timeout=60000) as imported:
        dialog.import_file(str(source))
    assert [p.name for p in imported.args[0]] == [p.name for p in many]
    assert len(writes) == 1 and writes[0] is not threading.main_thread()
    assert [p.name for p in presets.load_user()] == [p.name for p in many]
    assert presets.find("p42").values == {"top_k": 42}  # type: ignore[union-attr]
