"""What a finished reply stores, worked out without Qt (gui/chat/finished_reply.py)."""

from __future__ import annotations

import copy

from specula.core.chat.conversations import Message
from specula.gui.chat.finished_reply import finish, shown_version, stored_meta


def stored(content: str, meta: dict[str, object]) -> Message:
    return Message(id=7, conversation_id=1, position=3, role="assistant", content=content,
                   created=0.0, meta=meta)


def test_a_continued_reply_is_one_reply_its_parts_added_up() -> None:
    first = stored("Once upon", {"stats": {"tokens": 2, "total_s": 1.0, "ttft_s": 0.5},
                                 "stop_reason": "length", "token_ids": [11, 12]})
    reply = finish(" a time", [13, 14, 15], {"tokens": 3, "total_s": 2.0, "ttft_s": 0.25},
                   "eos", continuing=first)
    assert reply.text == "Once upon a time"
    assert reply.token_ids == [11, 12, 13, 14, 15]
    assert reply.stats["tokens"] == 5 and reply.stats["total_s"] == 3.0
    assert reply.stats["ttft_s"] == 0.5  # the reply began with its first part
    assert "5 tokens" in reply.footer and not reply.can_continue  # it ended at eos


def test_a_cut_reply_may_go_on_and_its_message_follows_the_footer() -> None:
    reply = finish("abc", [1, 2], {"tokens": 2}, "length", message="Context full soon.")
    assert reply.can_continue
    assert reply.footer.endswith("\nContext full soon.")
    assert not finish("abc", [], {"tokens": 0}, "length").can_continue  # no ids to go on from


def test_a_regenerated_reply_is_shown_after_the_earlier_versions() -> None:
    earlier = [{"content": "one"}, {"content": "two"}]
    reply = finish("three", [3], {"tokens": 1}, "eos")
    meta = stored_meta(reply, [["three", "target", 0]], earlier=earlier)
    assert [v["content"] for v in meta["versions"]] == ["one", "two", "three"]
    assert shown_version(meta) == (2, 3)
    assert meta["token_ids"] == [3] and meta["tokens"] == [["three", "target", 0]]


def test_continuing_rewrites_the_shown_version_and_leaves_the_stored_message_alone() -> None:
    old_meta = {"versions": [{"content": "a"}, {"content": "b"}], "version": 0,
                "stats": {"tokens": 1}, "stop_reason": "length", "token_ids": [1]}
    old = stored("a", old_meta)
    before = copy.deepcopy(old.meta)
    reply = finish("+", [2], {"tokens": 1}, "eos", continuing=old)
    meta = stored_meta(reply, [], continuing=old)
    assert [v["content"] for v in meta["versions"]] == ["a+", "b"]
    assert shown_version(meta) == (0, 2)
    assert old.meta == before


def test_a_reply_never_regenerated_is_version_one_of_one() -> None:
    assert shown_version({}) == (0, 1)


def test_the_footer_says_paused_exactly_when_the_verdict_did() -> None:
    """An adaptive reply that ended on 10 plain steps: the header states the policy's
    verdict, and the footer (now, and reopened from the store) says the same; a message
    stored before the verdict was kept still infers it from its last steps."""
    from specula.gui.stats.footer import footer_text
    from specula.gui.stats.live_stats import PAUSED_TEXT

    stats = {"mode": "adaptive", "tokens": 40, "total_s": 4.0, "ttft_s": 0.5, "steps": 30,
             "drafted": 30, "accepted": 25, "drafting_steps": 20, "plain_run": 10}
    drafting = finish("x", [1], stats, "eos", paused=False)
    assert PAUSED_TEXT not in drafting.footer  # a plain stretch, not a verdict
    assert PAUSED_TEXT not in footer_text(stored_meta(drafting, [])["stats"])
    paused = finish("x", [1], stats, "eos", paused=True)
    assert PAUSED_TEXT in paused.footer and PAUSED_TEXT in footer_text(stored_meta(paused, [])["stats"])
    assert PAUSED_TEXT in footer_text(stats)  # stored without a verdict: 10 plain steps at the end


def test_the_footer_says_the_stop_loss_ended_a_replys_drafting_instead_of_the_pause() -> None:
    """The verdict said the stop-loss ended this reply's drafting (and left drafting paused):
    the footer says that, now and reopened from the store, and not the pause's sentence."""
    from specula.gui.stats.footer import footer_text
    from specula.gui.stats.live_stats import PAUSED_TEXT, STOPPED_TEXT

    stats = {"mode": "adaptive", "tokens": 96, "total_s": 16.0, "ttft_s": 0.2, "steps": 80,
             "drafted": 9, "accepted": 2, "drafting_steps": 3, "plain_run": 77}
    stopped = finish("x", [1], stats, "eos", paused=True, stopped=True)
    for footer in (stopped.footer, footer_text(stored_meta(stopped, [])["stats"])):
        assert footer.count(STOPPED_TEXT) == 1 and PAUSED_TEXT not in footer
    paused = finish("x", [1], stats, "eos", paused=True)
    assert STOPPED_TEXT not in paused.footer and PAUSED_TEXT in paused.footer


def test_the_footer_says_why_a_held_back_short_answer_did_not_draft() -> None:
    """The verdict said the draft was not fed for this short answer: the footer says so,
    now and reopened from the store; without it the footer counts the steps only."""
    from specula.gui.stats.footer import footer_text
    from specula.gui.stats.live_stats import HELD_BACK_TEXT

    stats = {"mode": "adaptive", "tokens": 18, "total_s": 2.7, "ttft_s": 0.1, "steps": 17,
             "drafted": 0, "accepted": 0, "drafting_steps": 0, "plain_run": 17}
    held = finish("x", [1], stats, "eos", paused=False, held_back=True)
    assert HELD_BACK_TEXT in held.footer
    assert HELD_BACK_TEXT in footer_text(stored_meta(held, [])["stats"])
    plain = finish("x", [1], stats, "eos", paused=False)
    assert HELD_BACK_TEXT not in plain.footer and "drafted in 0 of 17 steps" in plain.footer
