"""Rough edges with a pair loaded (issue 45, item 9): "Ready" does not ask for the draft that
is loaded; "1 thread"; New chat clears the last reply's numbers; the server's log lists every
request with its status, refusals included."""

from __future__ import annotations

import urllib.request

import pytest

from specula.core.gguf.model_info import read_model_info
from specula.gui.chat.draft_list import status_text
from specula.gui.stats import live_stats as ls
from tests.gui.app_state.test_server_chip import _free_port, _post
from tests.gui.conftest import send_and_wait


def test_ready_does_not_ask_for_a_draft_that_is_loaded(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    page.new_chat()
    assert page.centre_stack.currentWidget() is page.empty
    assert page.empty.title.text() == "Ready"
    assert "draft" in page.empty.text.text() and "Load a smaller model" not in \
        page.empty.text.text()
    with qtbot.waitSignal(loaded.ctx.engine.draft_unloaded, timeout=30000):
        loaded.ctx.engine.unload_draft()
    assert "Load a smaller model of the same family as the draft" in page.empty.text.text()


def test_one_thread_is_one_thread(tiny) -> None:  # type: ignore[no-untyped-def]
    info = read_model_info(tiny["target"])
    assert ", 1 thread\n" in status_text(info, "CPU", 1)
    assert ", 4 threads\n" in status_text(info, "CPU", 4)


def test_new_chat_clears_the_last_replys_numbers(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = loaded.chat
    send_and_wait(qtbot, loaded, "count to five")
    panel = page.stats_panel
    panel.refresh()
    assert panel.values["tokens"].text() != ls.DASH
    page.new_chat()
    assert panel.values["tokens"].text() == ls.DASH and panel.big.text() == ls.DASH
    assert panel.values["acceptance"].text() == ls.DASH


def _get(port: int, path: str) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
        return int(r.status)


# The offscreen platform cannot raise a popup or give it the keyboard; a desktop can.
@pytest.mark.qt_log_ignore("does not support raise", "does not support grabbing the keyboard")
def test_the_server_log_lists_every_request_with_its_status(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    w.chat.settings_panel.max_tokens.setValue(3)
    port = _free_port()
    w.ctx.server.start(port)
    out: dict[str, object] = {}
    t = _post(port, {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]},
              out)
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=60000)
    assert out["error"][0] == 404 and "model_not_found" in out["error"][1]  # type: ignore[index]
    bad: dict[str, object] = {}
    t = _post(port, {"messages": "not a list"}, bad)
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=60000)
    assert bad["error"][0] == 400  # type: ignore[index]
    ok: dict[str, object] = {}
    t = _post(port, {"model": "TINY TARGET", "messages": [{"role": "user", "content": "hi"}]}, ok)
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=120000)
    assert "reply" in ok, ok
    assert _get(port, "/v1/models") == 200
    qtbot.waitUntil(lambda: len(w.ctx.server.log) == 4, timeout=10000)
    lines = [w.ctx.server.log[i] for i in range(4)]
    assert [(a.method, a.path, a.status) for a in lines] == [
        ("POST", "/v1/chat/completions", 404), ("POST", "/v1/chat/completions", 400),
        ("POST", "/v1/chat/completions", 200), ("GET", "/v1/models", 200)]
    panel = w.chat.model_bar.server_chip.show_log()
    shown = [panel.requests.item(i).text() for i in range(panel.requests.count())]
    assert len(shown) == 4  # newest first
    assert " · POST /v1/chat/completions · 404 · The model 'no-such-model' does not exist" \
        in shown[3]
    assert " · 400 · " in shown[2]
    tokens = ok["reply"]["usage"]["completion_tokens"]  # type: ignore[index]
    assert f" · 200 · {tokens} tokens" in shown[1] and shown[0].endswith("GET /v1/models · 200")
    assert w.chat.model_bar.server_chip.text() == f"Serving :{port} · 4 requests"
    w.ctx.server.stop()
