"""An API key no client could send is refused at start; a good one is compared as bytes."""

from __future__ import annotations

import pytest

from specula.cli import main
from specula.server import BadApiKey, LocalServer
from specula.server.local import check_api_key
from tests.server.wire import exchange, request_bytes


@pytest.mark.parametrize("key", ["   ", "\t", "two words", "cl\u00e9", "\u00a0key", "k\x00y", "k\ny"])
def test_unusable_keys_are_refused(server: LocalServer, key: str) -> None:
    with pytest.raises(BadApiKey):
        check_api_key(key)
    with pytest.raises(BadApiKey):  # the GUI's path too, before anything binds
        LocalServer(server.host, bind="0.0.0.0", port=0, allow_remote=True, api_key=key)


@pytest.mark.parametrize("key", ["   ", "cl\u00e9"])
def test_cli_refuses_before_binding_or_loading(key: str, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECULA_API_KEY", raising=False)
    rc = main(["serve", "--model", "absent.gguf", "--host", "0.0.0.0", "--allow-remote",
               "--api-key", key])
    err = capsys.readouterr().err
    assert rc == 2 and "API key" in err and "absent.gguf" not in err
    monkeypatch.setenv("SPECULA_API_KEY", key)
    assert main(["serve", "--model", "absent.gguf", "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "API key" in capsys.readouterr().err


def test_keys_match_byte_for_byte(server: LocalServer) -> None:
    check_api_key("sk-Abc_123.~!")
    srv = LocalServer(server.host, port=0, api_key="sk-Abc_123.~!")
    srv.start()
    try:
        def status(token: bytes) -> int:
            head = request_bytes("/v1/models", b"", method="GET")
            head = head.replace(b"\r\n\r\n", b"\r\nAuthorization: Bearer " + token + b"\r\n\r\n", 1)
            return exchange(srv.port, head).status

        assert status(b"sk-Abc_123.~!") == 200
        assert status(b"  sk-Abc_123.~!  ") == 200  # surrounding spaces are not part of a token
        for near in (b"sk-abc_123.~!", b"sk-Abc_123.~", b"sk-Abc_123.~!x", b"sk-Abc_123.~!\xe9",
                     b"\xc3\xa9", b""):
            assert status(near) == 401, near
    finally:
        srv.stop()
