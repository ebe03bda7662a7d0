"""The app's local-server switch: other apps reach the loaded pair over the OpenAI API."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_switch_serves_the_loaded_pair(loaded, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    page = w.show_page("settings")
    port = _free_port()
    page.port.setValue(port)
    page.serve.setChecked(True)
    qtbot.waitUntil(lambda: w.ctx.server.running, timeout=10000)
    assert f"127.0.0.1:{port}" in page.serve_status.text()

    result: dict[str, object] = {}

    def call() -> None:
        base = f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(base + "/models", timeout=60) as r:
            result["models"] = json.load(r)
        model_id = result["models"]["data"][0]["id"]  # type: ignore[index]
        # a fixed chain: adaptive rightly skips a tiny draft that costs what the target does
        body = json.dumps({"model": model_id, "max_tokens": 12, "temperature": 0,
                           "specula": {"mode": "chain"},
                           "messages": [{"role": "user", "content": "hello world"}]}).encode()
        req = urllib.request.Request(base + "/chat/completions", body,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            result["chat"] = json.load(r)

    t = threading.Thread(target=call)
    t.start()
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=120000)
    assert result["models"]["data"][0]["id"] == "tiny-target"  # type: ignore[index]
    chat = result["chat"]
    assert chat["usage"]["completion_tokens"] == 12  # type: ignore[index]
    assert chat["specula"]["drafted"] > 0  # type: ignore[index]  # the app's draft served it

    page.serve.setChecked(False)
    qtbot.waitUntil(lambda: not w.ctx.server.running, timeout=10000)
    assert "off" in page.serve_status.text()
