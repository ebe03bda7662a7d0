"""A fake machine for the adaptive policy: scripted costs and scripted acceptance.

The policy is driven exactly as the generator drives it (sync at prefill, a first
step that is the target's alone, then plan -> keep_drafting per token -> observe),
but time comes from a cost table and acceptance from a fixed per-position script,
so a policy and a fixed chain can be compared on the same "text" without a model
and without a clock. The reference it is judged against, the best fixed chain on
that script, runs through the same simulator with the product's ChainPolicy,
which knows nothing of costs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specula.core.engine.drafters.model import STEP_FEED
from specula.core.engine.events import TokenOrigin
from specula.core.engine.loop.calibration import MAX_BATCH, TREE_BATCH, Calibration, timed_passes
from specula.core.engine.policy.cost_model import SHORT_FEED
from specula.core.engine.policy.fixed import DraftPolicy, Outcome, PlanInput
from specula.core.engine.stats import StepRecord

ALL = frozenset({TokenOrigin.CHAIN, TokenOrigin.TREE, TokenOrigin.LOOKUP})
TREE_DEPTH = 4  # a simulated tree's depth (its top branch: the draft's own chain)


@dataclass
class Machine:
    """Seconds per target verify of n tokens, per draft decode, per extra catch-up token.

    A catch-up is one batched draft feed: its first SHORT_FEED tokens cost
    ``catchup_per_token`` each past the first, the rest far less, so that feeding the
    whole prompt costs ``prompt_s`` (as the real draft's batched feeds do)."""

    verify: Callable[[int], float]
    draft: float
    catchup_per_token: float
    prompt: int = 40  # prompt tokens the draft catches up on after the first token
    prompt_s: float = 0.0  # what that catch-up costs (one batched feed)
    # A busy machine: each timed decode (verify, draft, catch-up, calibration) is stretched
    # by a factor this draws (None: a quiet machine, every time exactly as scripted).
    stretch: Callable[[], float] | None = None

    def timed(self, seconds: float) -> float:
        """What one decode of ``seconds`` takes on this machine now."""
        return seconds if self.stretch is None else seconds * self.stretch()

    @property
    def long_per_token(self) -> float:
        short = self.draft + self.catchup_per_token * (SHORT_FEED - 1)
        return max(self.prompt_s - short, 0.0) / max(self.prompt - SHORT_FEED, 1)

    def feed(self, n: int) -> float:
        """Seconds of one batched draft feed of n tokens."""
        extra = self.catchup_per_token * (min(n, SHORT_FEED) - 1)
        return self.draft + extra + self.long_per_token * max(n - SHORT_FEED, 0)

    def calibration(self) -> Calibration:
        """What the engine's calibration at load would have measured on this machine."""
        # the sizes the engine's calibration times (calibration.measure): every verify batch
        # a chain of up to DEFAULT_DRAFT_MAX tokens needs, and a default tree's
        verify, passes, erratic = timed_passes([*range(1, MAX_BATCH + 1), TREE_BATCH],
                                               lambda n: self.timed(self.verify(n)))
        return Calibration(verify=verify, passes=passes, erratic=erratic, draft=self.timed(self.draft),
                           catchup_per_token=self.catchup_per_token,
                           catchup_long_per_token=self.long_per_token)


# The real F16 pair (the 1.5B F16 target, the 0.5B Q4_K_M draft, one thread on this kind of
# machine): seconds per verify of n tokens as its calibration at load measured them, and the
# draft's agreement with the target on the 7 packaged code prompts, recorded by
# specula_tools.agreement_trace (greedy; per position of plain's reply: whether
# the draft's token is the target's, the draft's top probability and entropy there).
F16_VERIFY = {1: .119, 2: .192, 3: .189, 4: .208, 5: .220, 6: .246, 7: .265, 8: .333, 9: .356}
F16 = Machine(verify=lambda n: F16_VERIFY.get(n, .356 + .03 * (n - 9)), draft=0.025,
              catchup_per_token=0.012, prompt=50, prompt_s=0.33)
_LAB_DATA = Path(__file__).resolve().parents[3] / "docs" / "lab" / "data"
F16_TRACES = _LAB_DATA / "2026-12-01-adaptive-convergence" / "real-traces-f16-code.json"


# The same pair with llama.cpp's weight repacking off (as the peer benchmark runs it,
# docs/peer-benchmark.md): the engine's calibration at load, pinned to one core with one
# thread (specula_tools.adaptive_trace's first line, docs/lab/2026-12-02-peer-repeat3.md):
# one big jump from 1 to 2 tokens, then nearly flat; the draft's catch-up of a 78-token
# prompt took 0.67 s. The draft's agreement on the peer prompts (96 tokens of the target's
# greedy reply each) recorded by specula_tools.agreement_trace.
F16_NOREPACK_VERIFY = {1: .141, 2: .261, 3: .287, 4: .287, 5: .333, 6: .319, 7: .413, 8: .438,
                       9: .441, 13: .595}
F16_NOREPACK = Machine(
    verify=lambda n: F16_NOREPACK_VERIFY.get(n, .441 + .0385 * (n - 9)),
    draft=0.0356, catchup_per_token=0.0158, prompt=78, prompt_s=0.67)
UNSEEN_TRACES = _LAB_DATA / "2026-12-02-peer-repeat3" / "real-traces-f16-unseen.json"

# The Q4_K_M target with the same draft, repacking off, one thread (a compute-bound target:
# a verify of n tokens costs nearly n single decodes, and a chain pays only above about 0.9
# acceptance): median verify of n tokens and draft decode from specula_tools.mode_steps
# --steps on the peer prompts (app/specula_tools/lab/replay_probe_evidence.py). The F16 target
# here is dequantized from this Q4_K_M file, so the unseen traces stand for its agreement too.
Q4_VERIFY = {1: .151, 2: .225, 3: .276, 4: .330, 5: .365, 6: .378, 7: .414, 8: .45, 9: .482, 13: .60}
Q4 = Machine(verify=lambda n: Q4_VERIFY.get(n, .482 + .03 * (n - 9)), draft=0.066,
             catchup_per_token=0.012, prompt=24, prompt_s=0.25)

# The same Q4_K_M pair on a day its draft was dearer
# (docs/lab/data/2026-12-03-probe-window/probe-steps-q4-recheck.txt): the median verify of n
# tokens over that run's draft steps (n = 2, 4, 5, 9; linear between and past them), its median
# plain step, and the draft decode its policy had learnt. No chain could pay there even at 100%
# acceptance.
_Q4_DEAR_N, _Q4_DEAR_S = [1, 2, 4, 5, 9], [.159, .2335, .480, .496, .838]
Q4_DEAR_DRAFT = Machine(
    verify=lambda n: float(np.interp(n, _Q4_DEAR_N, _Q4_DEAR_S)) if n <= 9 else .838 + .0855 * (n - 9),
    draft=0.074, catchup_per_token=0.014, prompt=63, prompt_s=0.93)

# The F16 pair on a second VM of the same kind (docs/lab/2026-12-02-second-machine.md): the
# engine's calibration at load (verify of n tokens, s; a draft decode 62-66 ms), a verify curve
# that jumps at 5 tokens.
SECOND_VERIFY = {1: .263, 2: .288, 3: .290, 4: .303, 5: .535, 6: .554, 7: .572, 8: .589, 9: .745, 13: .902}
SECOND = Machine(verify=lambda n: SECOND_VERIFY.get(n, .745 + .04 * (n - 9)), draft=0.066,
                 catchup_per_token=0.012, prompt=50, prompt_s=0.5)


def unseen_traces() -> dict[str, dict[str, Any]]:
    """prompt id -> {"ok": [...], "p_top": [...], "entropy": [...]} on the peer prompts."""
    out: dict[str, dict[str, Any]] = json.loads(UNSEEN_TRACES.read_text())
    return out


def f16_traces() -> dict[str, dict[str, Any]]:
    """prompt id -> {"ok": [...], "p_top": [...], "entropy": [...]}"""
    out: dict[str, dict[str, Any]] = json.loads(F16_TRACES.read_text())
    return out

def script(rate: float, n: int, seed: int = 0, informative: float = 0.8,
           bursty: bool = False) -> tuple[list[bool], list[float]]:
    """Per position: does the draft's token equal the target's (probability ``rate``), and
    the draft's top probability there (high where it is right, with ``informative`` odds).
    ``bursty``: the draft is right in runs, as on real text (copied code, boilerplate): easy
    spans at 97% and hard ones at 40%, in proportions that average ``rate``."""
    rng = np.random.default_rng(seed)
    if bursty:
        easy_share = min(max((rate - 0.4) / 0.57, 0.0), 1.0)
        easy, ok = True, []
        for _ in range(n):
            if rng.random() < 0.08:  # spans of about 12 tokens
                easy = bool(rng.random() < easy_share)
            ok.append(bool(rng.random() < (0.97 if easy else 0.4)))
    else:
        ok = [bool(x) for x in rng.random(n) < rate]
    tell = rng.random(n) < informative
    p_top = [(0.97 if o else 0.45) if t else 0.8 for o, t in zip(ok, tell, strict=True)]
    return ok, p_top


@dataclass
class Reply:
    seconds: float = 0.0
    tokens: int = 0
    steps: list[tuple[str, int, int]] = field(default_factory=list)  # (source, drafted, accepted)
    catchup: int = 0  # prompt tokens the draft was fed at the reply's start (0: none)

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds


def step_oracle(m: Machine, ok: list[bool]) -> float:
    """tok/s of a per-step oracle over a trace: it knows where each step's first rejection
    falls and drafts exactly the run that will be accepted (at most 8), or nothing where a
    plain step is faster. Greedy per step, and it always pays the draft's prompt catch-up: a
    bound on what reading the draft's confidence can gain (docs/lab/data/2026-12-03-stop-rule-ceiling/)."""
    n, pos, sec, tok = len(ok), 1, m.prompt_s, 0
    while pos < n:
        run = 0
        while pos + run < n and ok[pos + run] and run < 8:
            run += 1
        k = min(run, n - pos - 1)
        if k == 0 or (k + 1) / (m.draft * k + m.verify(k + 1)) <= 1 / m.verify(1):
            k = 0
        sec += m.draft * k + m.verify(k + 1) if k else m.verify(1)
        tok += k + 1
        pos += k + 1
    return tok / sec


def edit_script(n: int, seed: int = 0, *, edit_first: bool = False,
                ) -> tuple[list[bool], list[float], list[int], list[bool]]:
    """A reply that repeats an earlier turn with a few edits: spans of 12-30 copied tokens,
    where prompt lookup has a long match (code 7) that is right and the draft is right 97%
    of the time, then edited spots of 2-5 tokens where lookup has no match or a short
    wrong one (code 1) and the draft is right 60% of the time (``edit_first``: the reply
    starts with one). (draft ok, draft p_top, lookup code, lookup ok) per position."""
    rng = np.random.default_rng(seed)
    ok: list[bool] = []
    code: list[int] = []
    lok: list[bool] = []
    while len(ok) < n:
        span = int(rng.integers(12, 31)) if ok or not edit_first else 0
        ok += [bool(x) for x in rng.random(span) < 0.97]
        code += [7] * span
        lok += [True] * span
        edit = int(rng.integers(2, 6))
        ok += [bool(x) for x in rng.random(edit) < 0.6]
        code += [int(c) for c in rng.choice([0, 1], edit)]
        lok += [False] * edit
    p_top = [0.97 if o else 0.5 for o in ok[:n]]
    return ok[:n], p_top, code[:n], lok[:n]


def run_reply(policy: DraftPolicy, m: Machine, ok: list[bool], p_top: list[float],
              max_tokens: int = 64, lookup: tuple[list[int], list[bool]] | None = None,
              entropy: list[float] | None = None, ends_at: int | None = None) -> Reply:
    """One reply of ``max_tokens`` over the script, timed by the machine (after the first token).

    ``ends_at``: the reply ends there (the target's end of turn) while the policy plans with
    the room ``max_tokens`` leaves (it cannot know that the answer is short).

    ``lookup``: per position, prompt lookup's match code (0: no match) and whether its
    token there is right; a lookup step proposes up to 8 tokens, accepted while right,
    and the draft does not see them (its lag grows by what the step emitted).
    ``entropy``: the draft's entropy per position (a recorded trace); without it a
    confident position (p_top > 0.9) reads 0.3 nats and any other 1.5."""
    out = Reply()
    available = ALL if lookup is not None else ALL - {TokenOrigin.LOOKUP}
    synced = policy.sync_draft_at_prefill()
    wait = policy.sync_after() if synced else 0
    pos = 1  # the first token is the target's alone (its time is TTFT, not counted)
    lag = m.prompt + 1
    end = min(max_tokens, ends_at or max_tokens)
    while pos < end:
        if synced and pos >= wait:
            # the draft catches up on the prompt (or a window of it) after the first token,
            # or once the reply has ``wait`` tokens (and the reply's tokens so far with it)
            synced = False
            window = policy.sync_window()
            fed = lag - 1 if window is None else min(lag - 1, window)
            whole = m.prompt_s + m.long_per_token * (lag - 1 - m.prompt)
            out.seconds += m.timed(whole if fed == lag - 1 else m.feed(fed + 1))
            out.catchup = fed
            lag = 1
        room = max_tokens - pos - 1
        look: list[int] = []
        code = 0
        if lookup is not None:
            code = lookup[0][min(pos, len(lookup[0]) - 1)]
            look = [0] * (min(8, room) if code else 0)
        plan = policy.plan(PlanInput(room, available, look, code if look else 0, lag))
        drafted, draft_s, decodes, depth, catchup_s = 0, 0.0, 0, 0, 0.0
        # as the engine reports it (ModelDrafter._start_step): a first feed of more than the
        # draft's last step left it is a catch-up on tokens it sat out for
        sat_out = lag > STEP_FEED
        right = ok
        if plan.source == TokenOrigin.LOOKUP and lookup is not None and plan.k > 0 and room > 0:
            drafted = min(plan.k, room, len(look))
            right = lookup[1]
        elif plan.source == TokenOrigin.CHAIN and plan.k > 0 and room > 0:
            draft_s = m.timed(m.feed(lag))  # the catch-up feed
            catchup_s = draft_s if sat_out else 0.0
            decodes = 1
            for i in range(min(plan.k, room)):
                j = min(pos + i, len(ok) - 1)
                h = entropy[j] if entropy is not None else (0.3 if p_top[j] > 0.9 else 1.5)
                keep, more = policy.keep_drafting(i, p_top[j], h)
                if not keep:
                    break
                drafted += 1
                if not more or drafted >= plan.k:
                    break
                draft_s += m.timed(m.draft)
                decodes += 1
        elif plan.source == TokenOrigin.TREE and plan.k > 0 and room > 0:
            # a tree as a chain of its top branch (TREE_DEPTH deep: one draft decode per
            # level) with side nodes that are never right, verified all at once
            depth = min(TREE_DEPTH, room, plan.k)
            feed = m.timed(m.feed(lag))
            catchup_s = feed if sat_out else 0.0
            draft_s = feed + sum(m.timed(m.draft) for _ in range(depth - 1))
            decodes, drafted = depth, plan.k
            right = ok
        accepted = 0
        limit = min(drafted, TREE_DEPTH) if plan.source == TokenOrigin.TREE else drafted
        while accepted < limit and right[min(pos + accepted, len(right) - 1)]:
            accepted += 1
        verify_s = m.timed(m.verify(drafted + 1))
        emitted = min(accepted + 1, end - pos)
        rec = StepRecord(len(out.steps), drafted, accepted, emitted, draft_s, verify_s, 0.0,
                         draft_decodes=decodes, catchup=lag if decodes else 0,
                         catchup_s=catchup_s)
        j = min(pos, len(p_top) - 1)
        source = plan.source if drafted else TokenOrigin.TARGET
        if source == TokenOrigin.LOOKUP:
            policy.observe(Outcome(source, [], [], accepted, code, rec))
        else:
            ent = entropy[j:j + drafted] if entropy is not None else [0.3] * drafted
            # a simulated tree's accepted path is its top branch (depth deep): the chain's run
            tree = source == TokenOrigin.TREE
            policy.observe(Outcome(source, p_top[j:j + drafted], ent, accepted, 0, rec,
                                   accepted if tree else -1, depth if tree else 0))
        out.seconds += draft_s + verify_s
        out.steps.append((source.value, drafted, accepted))
        pos += emitted
        if source == TokenOrigin.TREE:
            lag = 1
        elif source == TokenOrigin.CHAIN:
            lag = 2 if accepted == drafted else 1
        else:
            lag += emitted
    out.tokens = pos - 1
    policy.finish()
    return out
