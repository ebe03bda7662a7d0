"""Mode ``mtp`` on a target without MTP layers is refused by the server as by the command
line: a 400 naming ``specula.mode``, with the same sentence (core.engine.config.mtp_refusal),
never a reply that runs plain unsaid."""

from __future__ import annotations

from specula.server import LocalServer
from tests.server.conftest import post

ASK = [{"role": "user", "content": "hello"}]


def test_mode_mtp_without_mtp_layers_is_a_400_naming_the_field(server: LocalServer) -> None:
    for path, body in (("/v1/chat/completions", {"messages": ASK}),
                       ("/v1/completions", {"prompt": "hello"})):
        status, reply, _ = post(server, path, {"model": "tiny-target", "max_tokens": 4, **body,
                                               "specula": {"mode": "mtp"}})
        assert status == 400, reply
        err = reply["error"]
        assert err["param"] == "specula.mode"
        assert "has no MTP (NextN) layers" in err["message"] and "mode mtp needs" in err["message"]


def test_other_modes_still_run(server: LocalServer) -> None:
    status, reply, _ = post(server, "/v1/chat/completions", {
        "model": "tiny-target", "messages": ASK, "max_tokens": 4, "specula": {"mode": "plain"}})
    assert status == 200 and reply["specula"]["mode"] == "plain"
