"""`specula chat` as a user runs it (a real process, the tiny models): `/mode mtp` is
refused as `--mode mtp` is, and an overflow names the messages it left out."""

from __future__ import annotations

import re
from pathlib import Path

from tests.commands.test_chat_command import chat

REFUSAL = "has no MTP (NextN) layers this llama.cpp can run: mode mtp needs"


def test_mode_mtp_is_refused_inside_the_session_as_on_the_command_line(
        tiny: dict[str, Path], specula_home: Path) -> None:
    code, _, err = chat(tiny["target"], b"", "--mode", "mtp", home=specula_home)
    assert code == 2 and REFUSAL in err
    code, _, err = chat(tiny["target"], b"/mode mtp\nhello\n/stats\n/quit\n", home=specula_home)
    assert code == 0, err
    assert f"specula: error: {tiny['target']} {REFUSAL}" in err
    assert "mode mtp\n" not in err  # never acknowledged
    stats = [line for line in err.splitlines() if "tok/s" in line]
    assert stats and not stats[0].rstrip("]").endswith("mtp")  # the reply ran in the mode it had


def test_an_overflow_lists_the_messages_it_left_out(tiny: dict[str, Path], specula_home: Path) -> None:
    words = "zebra quartz lorem ipsum the code and the model " * 6
    lines = [f"message {name} {words}" for name in ("alpha", "bravo", "charlie", "delta", "echo")]
    stdin = ("\n".join(lines) + "\n/quit\n").encode()
    code, _, err = chat(tiny["target"], stdin, "--ctx", "256", home=specula_home)
    assert code == 0, err
    notices = re.findall(r"^\[(\d+) earlier messages? left out of the context(:|; now also:)\n"
                         r"((?:  .*\n)+)", err, re.MULTILINE)
    assert len(notices) >= 2, err
    listed: list[str] = []
    for n, lead, rows in notices:
        assert (lead == ":") is (not listed)  # later notices list only what went out since
        listed += rows.splitlines()
        assert len(listed) == int(n)  # every message left out, listed once
    assert listed[0].startswith("  #1 user: message alpha zebra")  # numbered as in the chat
    assert listed[1].startswith("  #2 assistant: ")
    assert listed[2].startswith("  #3 user: message bravo zebra")
    assert all(len(r) < 80 for r in listed)  # brief


def test_a_long_list_of_left_out_messages_is_cut_in_the_middle() -> None:
    from specula.commands.chat import left_out_list

    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} \x1b[2J " + "w " * 60}
            for i in range(12)]
    rows = left_out_list(msgs, 1, 10).splitlines()
    assert rows[0] == ":"
    assert [r.split(":")[0] for r in rows[1:]] == [
        "  #2 assistant", "  #3 user", "  #4 assistant", "  ... 4 more",
        "  #9 user", "  #10 assistant", "  #11 user"]
    assert "\x1b" not in "".join(rows) and "\\x1b[2J" in rows[1]  # shown, not obeyed
