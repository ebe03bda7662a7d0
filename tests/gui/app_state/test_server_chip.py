"""The local server on the chat page (issue 26, item 9): a chip, a request log, restored at
start, any of the model's names accepted, requests answered with the chat's settings."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from specula.core.gguf.model_info import read_model_info
from specula.core.settings import Settings
from specula.server import ServedModel


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_model_answers_to_its_display_name_and_aliases(tiny: dict[str, Path]) -> None:
    from specula.server.queue import aliases_for

    path = "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    info = replace(read_model_info(tiny["draft"]), source=path,
                   name="Qwen2.5 Coder 0.5B Instruct AWQ")
    served = ServedModel(Path(path).stem, path, None, 2048, "CPU", aliases=aliases_for(path, info))
    for name in ("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                 path, "Qwen2.5 Coder 0.5B Instruct AWQ", "Qwen2.5 Coder 0.5B Instruct",
                 "qwen2.5-coder-0.5b-instruct", "QWEN2.5_CODER_0.5B_INSTRUCT"):
        assert served.matches(name), name
    for name in ("qwen2.5-coder-1.5b-instruct", "", "gpt-4", "Qwen2.5 Coder"):
        assert not served.matches(name), name


def _post(port: int, body: dict[str, object], out: dict[str, object]) -> threading.Thread:
    def call() -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                out["reply"] = json.load(r)
        except urllib.error.HTTPError as exc:
            out["error"] = (exc.code, exc.read().decode())

    t = threading.Thread(target=call)
    t.start()
    return t


# The offscreen platform cannot raise a popup or give it the keyboard; a desktop can.
@pytest.mark.qt_log_ignore("does not support raise", "does not support grabbing the keyboard")
def test_the_chip_logs_requests_answered_with_the_chats_settings(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    chip = w.chat.model_bar.server_chip
    assert chip.text() == "Server off" and chip.isVisibleTo(w)
    w.chat.settings_panel.max_tokens.setValue(5)
    port = _free_port()
    w.ctx.server.start(port)
    assert chip.text() == f"Serving :{port}"
    assert w.pages["settings"].port.value() == port  # the Settings page shows the same server
    assert w.ctx.server.server.sampling.max_tokens == 5  # the chat's, not the Settings page's
    out: dict[str, object] = {}
    t = _post(port, {"model": "TINY TARGET",  # the display name, in any case and spacing
                     "messages": [{"role": "user", "content": "count"}]}, out)
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=120000)
    assert "reply" in out, out
    assert out["reply"]["usage"]["completion_tokens"] <= 5  # type: ignore[index]
    qtbot.waitUntil(lambda: len(w.ctx.server.log) == 1, timeout=60000)
    assert chip.text() == f"Serving :{port} · 1 request"  # the log and the chip move together
    panel = chip.show_log()
    line = panel.requests.item(0).text()
    tokens = out["reply"]["usage"]["completion_tokens"]  # type: ignore[index]
    assert f"{tokens} tokens" in line
    panel.toggle.click()  # Stop from the chip
    assert not w.ctx.server.running and chip.text() == "Server off"
    assert Settings.load().server_on is False


def test_the_server_is_restored_at_the_next_start(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    port = _free_port()
    w = make_window()
    w.ctx.server.start(port)
    assert w.ctx.server.running
    w.close()
    w.ctx.close()  # the app quits with the server on: it stays on for the next start
    assert Settings.load().server_on and Settings.load().server_port == port
    again = make_window()
    assert again.ctx.server.running and again.ctx.server.server.port == port
    assert again.chat.model_bar.server_chip.text() == f"Serving :{port}"
    settings_page = again.show_page("settings")
    assert settings_page.serve.isChecked() and settings_page.port.value() == port
    again.ctx.server.stop()
