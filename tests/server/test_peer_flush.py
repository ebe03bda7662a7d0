"""The peer benchmark's flush between sides: every Specula side starts as a new question.

Specula's sides share one server. A side asked right after another drafting side on the
same prompt used to find the draft already fed that prompt: its catch-up (0.6 s of an
11 s reply on the F16 pair) was free where the first side paid it, which favoured the
fixed chains over adaptive in the side-by-side table. The reply's own statistics say
what the draft was fed (``draft_catchup_tokens``), so the test reads the server's word.
"""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace
from typing import cast

from specula.server import LocalServer
from specula_tools.peer_bench import Server, Side, ask, flush

MESSAGES = [{"role": "user", "content": "List the days of the week, one per line, then the months."}]


def _side(server: LocalServer, name: str, mode: dict[str, object]) -> Side:
    with urllib.request.urlopen(server.url + "/v1/models", timeout=30) as resp:
        model = json.loads(resp.read())["data"][0]["id"]
    endpoint = cast(Server, SimpleNamespace(url=server.url, model=model))
    return Side(name, endpoint, {"specula": mode})


def test_each_drafting_side_catches_the_draft_up_on_the_whole_prompt(server: LocalServer) -> None:
    sides = [_side(server, "specula chain:3", {"mode": "chain", "draft_max": 3}),
             _side(server, "specula chain:2", {"mode": "chain", "draft_max": 2}),
             _side(server, "specula chain:3 again", {"mode": "chain", "draft_max": 3})]
    fed = []
    for side in sides:
        flush(side)
        run = ask(side, MESSAGES, 12, "days", 0)
        fed.append(run.detail["draft_catchup_tokens"])
    # the first side's draft held the flush's prompt only (the template's prefix agrees):
    # every later side must be fed as much, not the few tokens a held prompt leaves
    assert isinstance(fed[0], int) and fed[0] > 10, fed
    assert fed == [fed[0]] * 3, fed
