"""Per-step records and the statistics of one reply, computed in the core."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Protocol

import psutil


class MirrorCosts(Protocol):
    """What a KV mirror spent keeping recurrent memory exact (``native.checkpoints.KVCosts``)."""

    checkpoints: int
    checkpoint_bytes: int
    checkpoint_s: float
    restores: int
    restore_s: float
    replayed: int
    replay_s: float
    from_scratch: int

_PROC: psutil.Process | None = None


def _process() -> psutil.Process:
    """This process, made once: ``psutil.Process()`` costs ~0.1 ms, a read of it ~10 us."""
    global _PROC
    if _PROC is None:
        _PROC = psutil.Process()
    return _PROC


class StepShape(str, Enum):
    """What a step verified: nothing, a chain or a tree (how the target checked it), where
    ``events.TokenOrigin`` says where each token came from. A lookup and an MTP proposal
    are both chains; a tree request served as a chain (a recurrent target) is a chain."""

    PLAIN = "plain"  # nothing drafted: one target token
    CHAIN = "chain"  # a chain (from the draft model or prompt lookup)
    TREE = "tree"  # a token tree


@dataclass
class StepRecord:
    """One draft -> verify -> accept step."""

    step: int
    drafted: int  # draft tokens sent to verification (tree: nodes)
    accepted: int  # draft tokens the target accepted
    emitted: int  # tokens this step added (accepted + the target's own token)
    draft_s: float
    verify_s: float
    overhead_s: float  # host time: the step's wall time outside every llama_decode (target and draft)
    shape: StepShape = StepShape.CHAIN
    # The drafter the step asked: an events.TokenOrigin value (target: none, a plain
    # step | draft | tree | lookup | mtp). Records written before read "none" for target.
    source: str = "target"
    draft_decodes: int = 0  # draft llama_decode calls
    catchup: int = 0  # tokens the draft caught up on first
    relaxed_accepted: int = 0  # accepted only because of the lossy rule
    # How far the proposal reached: a chain's length, a tree's deepest node (0: plain step).
    depth: int = 0
    # The step's wall time, from the end of the previous step's bookkeeping to the end of
    # this one's (the consumer's time between steps excluded); 0 when not measured.
    step_s: float = 0.0
    draft_host_s: float = 0.0  # of overhead_s: the drafter's own Python work in propose
    # Of draft_s: a catch-up on tokens the draft sat out for (the conversation at the first
    # draft step of a lazily fed reply, plain or lookup steps), 0 for a step's own short feed.
    catchup_s: float = 0.0
    # Keeping a recurrent or hybrid cache exact (kv.py), target and draft: copying and
    # restoring recurrent states (host time, of overhead_s), and the target's decodes of
    # kept tokens again after a restore (replay_s, in no other field of the step).
    checkpoint_s: float = 0.0
    replay_s: float = 0.0
    replayed: int = 0

    @property
    def host_share(self) -> float:
        """The share of the step spent outside llama_decode (0 when not measured).

        On a GPU the decodes shrink and this share is what is left to win on the host."""
        total = self.step_s or (self.draft_s + self.verify_s + self.overhead_s)
        return self.overhead_s / total if total > 0 else 0.0


@dataclass
class GenerationStats:
    mode: str = "plain"
    acceptance_rule: str = "greedy"  # greedy | coupled | rejection-sampling | sample-and-match
    seed: int = 0  # the seed this reply ran with (drawn when the request asked for a random one)
    draft_stopped: str = ""  # why the drafter stopped for the rest of the reply ("" = it did not)
    prompt_tokens: int = 0
    prefill_tokens: int = 0  # prompt tokens actually evaluated (the rest came from the KV cache)
    prefill_s: float = 0.0
    ttft_s: float = 0.0
    # The draft's catch-ups on tokens it had not seen, wherever they ran: the prompt (fed in
    # prefill with draft_first_token, between the first two steps when deferred, or by the
    # first draft step an adaptive plan makes, inside that step's draft_s) and any later
    # catch-up after sitting out plain or lookup steps. Not a step's own 1-2 token feed.
    draft_catchup_s: float = 0.0
    draft_catchup_tokens: int = 0
    total_s: float = 0.0
    tokens: int = 0
    steps: int = 0
    # Steps that drafted (sent at least one draft token to verification), and the plain
    # steps in a row at the end of the reply: the one count every surface divides by.
    drafting_steps: int = 0
    plain_run: int = 0
    drafted: int = 0
    accepted: int = 0
    # Per draft position i (0 = the first drafted token), over the drafting steps: how many
    # proposals reached position i (a chain's length, a tree's depth) and how many steps
    # had their draft accepted up to and including it (llama.cpp's n_acc_tokens_per_pos);
    # both as long as the longest proposal.
    # Tuples, so that a snapshot (``snapshot``) shares nothing the loop changes.
    drafted_per_pos: tuple[int, ...] = ()
    accepted_per_pos: tuple[int, ...] = ()
    draft_tokens_emitted: int = 0
    zero_accept_steps: int = 0
    relaxed_accepted: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    overhead_s: float = 0.0  # host time over the steps (see StepRecord.overhead_s)
    draft_host_s: float = 0.0  # of overhead_s: the drafters' own Python work
    step_s: float = 0.0  # wall time of the steps (see StepRecord.step_s)
    peak_rss_bytes: int = 0
    # The target's memory (attention | recurrent | hybrid) and what keeping it exact cost
    # this reply (all 0 on attention): recurrent states saved (their bytes and copy time),
    # restored, tokens decoded again after a restore, cuts that found no checkpoint.
    memory: str = "attention"
    trees_as_chains: bool = False  # tree steps ran as chains (a pure recurrent target)
    checkpoints: int = 0
    checkpoint_bytes: int = 0
    checkpoint_s: float = 0.0  # copies and restores together
    restores: int = 0
    replayed_tokens: int = 0
    replay_s: float = 0.0
    from_scratch: int = 0
    # The draft's cache (a recurrent draft): its copies, and the tokens it was fed again
    # after a restore (inside its catch-up feeds, so within draft_s).
    draft_checkpoints: int = 0
    draft_checkpoint_s: float = 0.0
    draft_replayed_tokens: int = 0

    @property
    def decode_s(self) -> float:
        """Time spent after the first token (the denominator of tok/s)."""
        return max(self.total_s - self.ttft_s, 0.0)

    @property
    def tokens_per_s(self) -> float:
        if self.tokens <= 1:
            return self.tokens / self.total_s if self.total_s > 0 else 0.0
        return (self.tokens - 1) / self.decode_s if self.decode_s > 0 else 0.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def accepted_per_drafting_step(self) -> float | None:
        """Draft tokens accepted per step that drafted; None when nothing was drafted.

        The one definition of "accepted per step" that the CLI, the server, the bench,
        the live panel and the footer all show: plain steps of an adaptive reply (nothing
        proposed, nothing to accept) do not dilute it.
        """
        return self.accepted / self.drafting_steps if self.drafting_steps else None

    @property
    def mean_accepted_per_step(self) -> float:
        """:attr:`accepted_per_drafting_step`, 0.0 when nothing was drafted (the server's
        and the bench's older key, kept with the same number)."""
        per = self.accepted_per_drafting_step
        return per if per is not None else 0.0

    @property
    def acceptance_per_pos(self) -> tuple[float, ...]:
        """Per draft position: the share of proposals reaching it that were accepted there."""
        return tuple(a / d if d else 0.0
                     for a, d in zip(self.accepted_per_pos, self.drafted_per_pos, strict=True))

    @property
    def host_share(self) -> float:
        """The share of the steps' time spent outside llama_decode, the drafter's
        Python work included: what a faster accelerator cannot shrink."""
        busy = self.step_s or (self.draft_s + self.verify_s + self.overhead_s)
        return self.overhead_s / busy if busy > 0 else 0.0

    @property
    def overhead_fraction(self) -> float:
        """The older name of :attr:`host_share`."""
        return self.host_share

    def add_step(self, rec: StepRecord) -> None:
        self.steps += 1
        if rec.drafted:
            self.drafting_steps += 1
            self.plain_run = 0
            self.drafted_per_pos = _count_first(self.drafted_per_pos, rec.depth or rec.drafted)
            accepted = _count_first(self.accepted_per_pos, rec.accepted)
            self.accepted_per_pos = accepted + (0,) * (len(self.drafted_per_pos) - len(accepted))
        else:
            self.plain_run += 1
        self.drafted += rec.drafted
        self.accepted += rec.accepted
        self.relaxed_accepted += rec.relaxed_accepted
        if rec.drafted and rec.accepted == 0:
            self.zero_accept_steps += 1
        self.draft_s += rec.draft_s
        self.verify_s += rec.verify_s
        self.overhead_s += rec.overhead_s
        self.draft_host_s += rec.draft_host_s
        self.step_s += rec.step_s
        if rec.catchup_s > 0:
            self.add_catchup(rec.catchup, rec.catchup_s)

    def snapshot(self) -> GenerationStats:
        """A copy of the totals now, for a StepEvent: the loop goes on changing ``self``,
        the copy never changes (its per-position counts are tuples, shared safely)."""
        return copy.copy(self)

    def add_catchup(self, tokens: int, seconds: float) -> None:
        """Count a catch-up of the draft on tokens it had not seen (see draft_catchup_s)."""
        self.draft_catchup_tokens += tokens
        self.draft_catchup_s += seconds

    def add_mirror_costs(self, target: MirrorCosts, draft: MirrorCosts) -> None:
        """This reply's share of what the target's and the draft's KV mirrors spent
        keeping a recurrent memory exact (``native.checkpoints.KVCosts``, passed by the generator)."""
        self.checkpoints += target.checkpoints
        self.checkpoint_bytes += target.checkpoint_bytes
        self.checkpoint_s += target.checkpoint_s + target.restore_s
        self.restores += target.restores
        self.replayed_tokens += target.replayed
        self.replay_s += target.replay_s
        self.from_scratch += target.from_scratch
        self.draft_checkpoints += draft.checkpoints
        self.draft_checkpoint_s += draft.checkpoint_s + draft.restore_s
        self.draft_replayed_tokens += draft.replayed

    @property
    def checkpoint_bytes_each(self) -> int:
        """The size of one target checkpoint (the recurrent state of one sequence)."""
        return self.checkpoint_bytes // self.checkpoints if self.checkpoints else 0

    def sample_memory(self) -> None:
        rss = _process().memory_info().rss
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)

    def summary_line(self) -> str:
        """`42.1 tok/s, 128 tokens, 81% of 96 draft tokens accepted, 3.40 per drafting step,
        TTFT 0.21 s, chain`: the per-step figure as the panel and the footer print it."""
        parts = [f"{self.tokens_per_s:.1f} tok/s", f"{self.tokens} tokens"]
        if self.drafted:
            parts.append(
                f"{self.acceptance_rate:.0%} of {self.drafted} draft tokens accepted"
            )
            parts.append(f"{self.mean_accepted_per_step:.2f} per drafting step")
        parts.append(f"TTFT {self.ttft_s:.2f} s")
        parts.append(self.mode)
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        d = {k: (list(v) if isinstance(v, tuple) else v)
             for k, v in asdict(self).items() if not k.startswith("_")}
        d.update(
            tokens_per_s=self.tokens_per_s,
            acceptance_rate=self.acceptance_rate,
            mean_accepted_per_step=self.mean_accepted_per_step,
            accepted_per_drafting_step=self.accepted_per_drafting_step,
            overhead_fraction=self.overhead_fraction,
            host_share=self.host_share,
            decode_s=self.decode_s,
            checkpoint_bytes_each=self.checkpoint_bytes_each,
        )
        return d


def _count_first(counts: tuple[int, ...], n: int) -> tuple[int, ...]:
    """``counts`` with one more at each of the first ``n`` positions (grown as needed)."""
    if n <= 0:
        return counts
    grown = counts + (0,) * max(n - len(counts), 0)
    return tuple(c + 1 if i < n else c for i, c in enumerate(grown))
