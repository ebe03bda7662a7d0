"""Loopback by default; other addresses need --allow-remote and an API key, checked every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specula.cli import main
from specula.server import LocalServer, RemoteBindingRefused
from tests.server.conftest import raw


def test_remote_binding_needs_flag_and_key(server: LocalServer) -> None:
    with pytest.raises(RemoteBindingRefused, match="allow-remote"):
        LocalServer(server.host, bind="0.0.0.0", port=0)
    with pytest.raises(RemoteBindingRefused, match="API key"):
        LocalServer(server.host, bind="0.0.0.0", port=0, allow_remote=True)
    LocalServer(server.host, bind="::1", port=0)  # loopback needs neither


def test_cli_refuses_remote_binding_before_loading(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECULA_API_KEY", raising=False)
    assert main(["serve", "--model", "absent.gguf", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main(["serve", "--model", "absent.gguf", "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "API key" in capsys.readouterr().err


def test_api_key_checked_on_every_request(server: LocalServer, tiny: dict[str, Path]) -> None:
    import openai

    remote = LocalServer(server.host, bind="0.0.0.0", port=0, allow_remote=True, api_key="s3cret")
    remote.start()
    try:
        status, body, _ = raw(remote, "GET", "/v1/models")
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        status, body, _ = raw(remote, "GET", "/v1/models", headers={"Authorization": "Bearer nope"})
        assert status == 401
        status, _, _ = raw(remote, "POST", "/v1/completions", b"{}")
        assert status == 401
        bad: Any = openai.OpenAI(base_url=f"http://127.0.0.1:{remote.port}/v1", api_key="wrong",
                                 max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.chat.completions.create(model="tiny-target", messages=[{"role": "user", "content": "x"}])
        good: Any = openai.OpenAI(base_url=f"http://127.0.0.1:{remote.port}/v1", api_key="s3cret",
                                  max_retries=0)
        r = good.chat.completions.create(model="tiny-target", max_tokens=3,
                                         messages=[{"role": "user", "content": "x"}])
        assert r.usage.completion_tokens == 3
    finally:
        remote.stop()
