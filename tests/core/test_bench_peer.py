"""The peer benchmark's arithmetic: a streamed reply read into figures, and the table's
ratios, checked against hand-computed values."""

from __future__ import annotations

import json

import pytest

from specula.core.bench.peer import PEER_PLAIN, PeerRun, format_table, read_stream, rows


def _sse(*chunks: dict[str, object]) -> list[bytes]:
    return [f"data: {json.dumps(c)}\n".encode() for c in chunks] + [b"data: [DONE]\n"]


def _delta(text: str) -> dict[str, object]:
    return {"choices": [{"delta": {"content": text}}]}


def test_a_llama_server_stream_gives_its_own_timings() -> None:
    lines = _sse(_delta(""), _delta("def"), _delta(" f"),
                 {"choices": [{"delta": {}, "finish_reason": "length"}],
                  "timings": {"predicted_n": 96, "predicted_per_second": 12.5,
                              "draft_n": 40, "draft_n_accepted": 30}})
    clock = iter([10.1, 10.3, 10.4, 11.9, 12.0])  # one reading per line
    run = read_stream(lines, 10.0, clock, PEER_PLAIN, "p", 0)
    assert run.text == "def f"
    assert run.ttft_s == pytest.approx(0.3)  # the first non-empty content
    assert run.wall_s == pytest.approx(2.0)
    assert (run.tokens, run.decode_tok_s, run.drafted, run.accepted) == (96, 12.5, 40, 30)
    assert run.acceptance == pytest.approx(0.75)


def test_a_specula_stream_gives_its_specula_statistics() -> None:
    lines = _sse(_delta("x"), {"choices": [], "specula": {"tokens": 50, "tokens_per_s": 20.0,
                                                           "drafted": 10, "accepted": 9}})
    run = read_stream(lines, 0.0, iter([0.5, 1.0, 1.1]), "specula adaptive", "p", 0)
    assert (run.tokens, run.decode_tok_s, run.drafted, run.accepted) == (50, 20.0, 10, 9)
    assert run.detail == {"tokens": 50, "tokens_per_s": 20.0, "drafted": 10, "accepted": 9}


def test_a_stream_without_timings_is_refused() -> None:
    with pytest.raises(ValueError, match="no timings"):
        read_stream(_sse(_delta("x")), 0.0, iter([1.0, 2.0]), "odd", "p", 0)


def _run(side: str, pid: str, rate: float, text: str = "t", r: int = 0) -> PeerRun:
    return PeerRun(side, pid, r, text, 96, rate, 0.1, 5.0, 10 if "draft" in side or "specula" in side else 0, 8)


def test_the_table_takes_medians_over_repeats_and_ratios_per_prompt() -> None:
    runs = [
        _run(PEER_PLAIN, "a", 10.0, r=0), _run(PEER_PLAIN, "a", 12.0, r=1), _run(PEER_PLAIN, "a", 11.0, r=2),
        _run("llama-server draft:3", "a", 15.0), _run("llama-server draft:8", "a", 18.0),
        _run("specula chain:3", "a", 20.0), _run("specula chain:6", "a", 22.0),
        _run("specula plain", "a", 10.0),
        _run("specula adaptive", "a", 19.8, text="other"),
    ]
    (row,) = rows(runs)
    assert row.decode[PEER_PLAIN] == 11.0  # median of 10, 12, 11
    assert row.ratio("specula adaptive") == pytest.approx(19.8 / 10.0)  # within repeat 0, its only one
    assert row.best("llama-server draft") == ("llama-server draft:8", 18.0)
    assert row.identical == {PEER_PLAIN: True, "llama-server draft:3": True, "llama-server draft:8": True,
                             "specula chain:3": True, "specula chain:6": True, "specula plain": True,
                             "specula adaptive": False}
    text = format_table([row], [PEER_PLAIN, "specula adaptive"])
    assert "1.98x)" in text and "*" in text  # 19.8 / 10 (repeat 0), and the differing text marked
    assert "adaptive / llama-server's best draft setting: median 1.10x" in text  # 19.8 / 18
    assert "adaptive / the best fixed chain: median 0.90x" in text  # 19.8 / 22
    assert "adaptive / specula plain: median 1.98x" in text


def test_ratios_pair_the_runs_of_one_repeat() -> None:
    """A busy minute slows every side of a repeat: ratios are taken within each repeat,
    then their median; a ratio of medians would mix repeats (here 0.96x, a loss only
    one repeat showed)."""
    rates = {  # repeat -> (adaptive, chain:3): adaptive ahead in every repeat
        0: (6.0, 5.5), 1: (8.0, 7.5), 2: (7.2, 9.0 * 7.2 / 8.4),
    }
    runs = [PeerRun(PEER_PLAIN, "p", r, "t", 96, 5.0, 0.1, 5.0) for r in rates]
    for r, (a, c) in rates.items():
        runs += [PeerRun("specula adaptive", "p", r, "t", 96, a, 0.1, 5.0, 10, 8),
                 PeerRun("specula chain:3", "p", r, "t", 96, c, 0.1, 5.0, 10, 8)]
    (row,) = rows(runs)
    by_hand = sorted([6.0 / 5.5, 8.0 / 7.5, 8.4 / 9.0])[1]  # the median of the three ratios
    assert row.ratio("specula adaptive", "specula chain:3") == pytest.approx(by_hand)
    assert by_hand > 1.0 > 7.2 / 7.5  # ... where the ratio of the medians says it trails
    assert f"adaptive / the best fixed chain: median {by_hand:.2f}x" in format_table([row], [PEER_PLAIN])


def test_whole_replies_are_compared_by_wall_time_within_each_repeat() -> None:
    """The whole-reply line: llama-server's best draft setting's wall time over adaptive's,
    per repeat, then the median (the draft's prompt is in one side's TTFT and in the
    other's decode time: the wall time holds both)."""
    walls = {0: (10.0, 12.0), 1: (11.0, 12.1), 2: (9.0, 9.9)}  # repeat -> (adaptive, draft:3)
    runs = []
    for r, (a, d) in walls.items():
        runs += [PeerRun(PEER_PLAIN, "p", r, "t", 96, 5.0, 0.1, 15.0),
                 PeerRun("llama-server draft:3", "p", r, "t", 96, 6.0, 0.1, d, 10, 8),
                 PeerRun("specula adaptive", "p", r, "t", 96, 7.0, 0.1, a, 10, 8)]
    (row,) = rows(runs)
    by_hand = sorted([12.0 / 10.0, 12.1 / 11.0, 9.9 / 9.0])[1]  # 1.2, 1.1, 1.1 -> 1.1
    assert row.wall_ratio("specula adaptive", "llama-server draft:3") == pytest.approx(by_hand)
    assert ("adaptive / llama-server's best draft setting, whole reply (wall time): median 1.10x, "
            "min 1.10x") in format_table([row], [PEER_PLAIN])
