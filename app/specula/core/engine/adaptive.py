"""The adaptive policy: draft what pays on this machine, for this pair, right now.

Each step it maximises expected *tokens per second* (not tokens per step:
SpecKV's per-step objective rewards long drafts that cost more than they
save). It keeps

* a cost model, measured as it runs: the draft's time per decode, the cost of
  catching the draft up after steps it sat out, and the target's verify time
  for each batch size;
* an acceptance model: the probability that a draft token is accepted given
  the draft's confidence (top probability) and entropy, as Beta counts per
  bin, and for prompt lookup per matched n-gram length.

A step can be plain (k = 0), a draft-model chain cut token by token when the
next token is not worth its cost, or a prompt-lookup chain. When plain wins it
still probes now and then (with exponential back-off) so that a change of
regime is noticed. Both models are saved per (target, draft, machine) so the
next session starts informed.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters.base import DraftSource
from specula.core.engine.policy import Outcome, Plan, PlanInput

log = logging.getLogger("specula.engine.adaptive")

P_EDGES = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.995)
ENTROPY_SPLIT = 1.0  # nats
PROBE_FIRST, PROBE_MAX = 1, 16  # replies between probes of a draft that does not pay
PROBE_STEPS = 3  # draft steps a probe makes
MARGIN = 0.05  # expected gain over plain decoding needed before drafting
MEASURED = 3  # observations of a batch size before its own average replaces the fit
REFRESH_PLAIN = 48  # steps between plain steps that re-measure one-token decodes


def _bin(p_top: float, entropy: float) -> int:
    b = sum(p_top >= e for e in P_EDGES)
    return b * 2 + (1 if entropy >= ENTROPY_SPLIT else 0)


@dataclass
class CostModel:
    """Seconds per target verify batch (by size) and per draft decode, as measured."""

    verify: dict[int, float] = field(default_factory=dict)
    verify_n: dict[int, int] = field(default_factory=dict)
    draft: float | None = None
    catchup_per_token: float | None = None  # extra seconds per extra token in a catch-up feed

    def observe_verify(self, n: int, seconds: float) -> None:
        c = self.verify_n.get(n, 0) + 1
        self.verify_n[n] = c
        alpha = max(0.1, 1.0 / c)
        old = self.verify.get(n, seconds)
        self.verify[n] = old + alpha * (seconds - old)

    def observe_draft(self, n_decodes: int, catchup: int, seconds: float) -> None:
        if n_decodes <= 0:
            return
        per = seconds / n_decodes
        if catchup > 1 and self.draft is not None:
            extra = max(seconds - n_decodes * self.draft, 0.0) / (catchup - 1)
            old = self.catchup_per_token if self.catchup_per_token is not None else extra
            self.catchup_per_token = old + 0.2 * (extra - old)
            return  # a catch-up step says little about one decode
        self.draft = per if self.draft is None else self.draft + 0.2 * (per - self.draft)

    def verify_time(self, n: int) -> float | None:
        """Verify seconds for a batch of n tokens: a weighted line through what was measured.

        One line V(n) = a + b (n - 1) over every batch size seen, weighted by how
        often each was seen, so that a rare size (the plain step, when drafting
        usually wins) borrows strength from the common ones and one slow outlier
        cannot make plain decoding look slower than it is.
        """
        known = [m for m in self.verify if self.verify_n.get(m, 0) > 0]
        if not known:
            return None
        if self.verify_n.get(n, 0) >= MEASURED:
            # Measured often enough, a batch size is its own number: verify time is not
            # linear (one token takes the matrix-vector path; kernels change tiles at
            # some batch sizes, e.g. 5 tokens cost 1.6x 4 tokens for an F16 target here).
            return self.verify[n]
        batches = [m for m in known if m >= 2]
        if n >= 2 and len(batches) >= 2:
            known = batches
        if len(known) == 1:
            m = known[0]
            v1 = self.verify[m] / (1 + 0.5 * (m - 1))  # prior: k tokens ~ 1 + 0.5(k-1) steps
            return v1 * (1 + 0.5 * (n - 1))
        w = [min(self.verify_n[m], 20) for m in known]
        x = [m - 1 for m in known]
        y = [self.verify[m] for m in known]
        sw = sum(w)
        mx = sum(wi * xi for wi, xi in zip(w, x, strict=True)) / sw
        my = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / sw
        sxx = sum(wi * (xi - mx) ** 2 for wi, xi in zip(w, x, strict=True))
        sxy = sum(wi * (xi - mx) * (yi - my) for wi, xi, yi in zip(w, x, y, strict=True))
        slope = max(sxy / sxx, 0.0) if sxx > 0 else 0.0
        intercept = my - slope * mx
        if intercept <= 0:  # a degenerate fit: fall back to the nearest measurement
            nearest = min(known, key=lambda m: abs(m - n))
            return self.verify[nearest]
        return intercept + slope * (n - 1)

    def catchup_time(self, tokens: int) -> float:
        if tokens <= 1 or self.draft is None:
            return 0.0
        per = self.catchup_per_token if self.catchup_per_token is not None else 0.3 * self.draft
        return per * (tokens - 1)


@dataclass
class AcceptanceModel:
    """P(draft token accepted | draft confidence), Beta counts per bin."""

    acc: dict[int, float] = field(default_factory=dict)
    tot: dict[int, float] = field(default_factory=dict)
    lookup_acc: dict[int, float] = field(default_factory=dict)
    lookup_tot: dict[int, float] = field(default_factory=dict)
    first_rate: float = 0.7  # running acceptance of a step's first draft token

    def predict(self, p_top: float, entropy: float) -> float:
        b = _bin(p_top, entropy)
        prior_a, prior_n = 2.0 * p_top, 2.0  # prior: the draft is calibrated
        return (self.acc.get(b, 0.0) + prior_a) / (self.tot.get(b, 0.0) + prior_n)

    def predict_lookup(self, match: int) -> float:
        return (self.lookup_acc.get(match, 0.0) + 1.0) / (self.lookup_tot.get(match, 0.0) + 2.0)

    def observe(self, top_probs: list[float], entropies: list[float], n_accepted: int) -> None:
        # Tokens after the first rejection were never judged: count only up to it.
        for j, (p, h) in enumerate(zip(top_probs, entropies, strict=False)):
            if j > n_accepted:
                break
            b = _bin(p, h)
            self.tot[b] = self.tot.get(b, 0.0) + 1.0
            if j < n_accepted:
                self.acc[b] = self.acc.get(b, 0.0) + 1.0
        if top_probs:
            self.first_rate += 0.1 * ((1.0 if n_accepted > 0 else 0.0) - self.first_rate)

    def observe_lookup(self, match: int, proposed: int, n_accepted: int) -> None:
        judged = min(proposed, n_accepted + 1)
        self.lookup_tot[match] = self.lookup_tot.get(match, 0.0) + judged
        self.lookup_acc[match] = self.lookup_acc.get(match, 0.0) + n_accepted


def expected_tokens(a: float, k: int) -> float:
    """Tokens per step with per-token acceptance a and k drafted: (1 - a^(k+1)) / (1 - a)."""
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


class AdaptivePolicy:
    name = "adaptive"

    def __init__(self, cfg: SpecConfig, state_path: Path | None = None, *,
                 allow_draft: bool = True) -> None:
        self.cfg = cfg
        self.allow_draft = allow_draft
        self.wants = frozenset(DraftSource) - {DraftSource.NONE}
        if not allow_draft:
            self.name = "lookup"  # prompt lookup alone, with the same cost model
            self.wants = frozenset({DraftSource.LOOKUP})
        self.cost = CostModel()
        self.acc = AcceptanceModel()
        self.state_path = state_path
        self.probe_every = PROBE_FIRST
        self.replies_since_probe = 0
        self.since_plain = 0
        self.tree_tries = 0
        self._probe_left = 0
        self._lag = 1  # tokens the draft must be fed before it can draft
        self._room = 1  # tokens the reply may still draft (the plan's room)
        self._probe = False
        # Measured tokens/s of draft-model steps by shape; a tree is tried now and then and
        # used while it beats the chain on this machine.
        self.shape_rate: dict[str, float] = {}
        self.draft_steps = 0
        self._step: dict[str, float] = {}
        if state_path is not None:
            self.load(state_path)

    # -- planning ------------------------------------------------------------

    def _draft_rate(self, k_max: int) -> tuple[float, int]:
        """Best expected tokens/s of a draft chain (and its length) at the typical acceptance."""
        v1 = self.cost.verify_time(1)
        if self.cost.draft is None or v1 is None:
            return 0.0, 0
        a = self.acc.first_rate
        best, best_k = 0.0, 0
        catch = self.cost.catchup_time(self._lag)
        for k in range(1, k_max + 1):
            e = expected_tokens(a, k)
            share = catch
            if self._lag > k_max + 1:
                # A long catch-up (the draft's feed of the prompt after the first token) is
                # paid once and serves every later step: each step bears its share over the
                # steps left, or drafting would never start after a deferred draft prefill.
                share = catch * min(1.0, e / max(self._room, 1))
            t = share + k * self.cost.draft + (self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k))
            rate = e / t
            if rate > best:
                best, best_k = rate, k
        return best, best_k

    def _lookup_rate(self, inp: PlanInput, k_max: int) -> tuple[float, int]:
        v1 = self.cost.verify_time(1)
        if not inp.lookup_tokens or v1 is None:
            return 0.0, 0
        a = self.acc.predict_lookup(inp.lookup_match)
        best, best_k = 0.0, 0
        for k in range(1, min(k_max, len(inp.lookup_tokens)) + 1):
            rate = expected_tokens(a, k) / (self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k))
            if rate > best:
                best, best_k = rate, k
        return best, best_k

    def plan(self, inp: PlanInput) -> Plan:
        k_max = min(self.cfg.draft_max, inp.room)
        self._lag = inp.draft_lag
        self._room = inp.room
        v1 = self.cost.verify_time(1)
        self.since_plain += 1
        if k_max <= 0 or v1 is None or self.since_plain >= REFRESH_PLAIN:
            # measure a plain step first, and now and then again: drafting is judged
            # against it, and it is rarely measured while drafting wins
            self.since_plain = 0
            return self._decide(Plan(DraftSource.NONE, 0))
        plain = 1.0 / v1
        if self._lookup_untried(inp):  # cheap exploration: one token
            return self._decide(Plan(DraftSource.LOOKUP, 1, inp.lookup_tokens[:1]), probe=True)
        l_rate, l_k = self._lookup_rate(inp, k_max)
        d_rate = 0.0
        if inp.has_draft and self.allow_draft:
            in_sync = inp.draft_lag <= 2
            if in_sync and (self.cost.draft is None or self._probe_left > 0):
                self._probe_left = max(self._probe_left - 1, 0)
                return self._decide(Plan(DraftSource.DRAFT, min(2, k_max)), probe=True)
            d_rate, _ = self._draft_rate(k_max)
            k_new = self._unmeasured_k(k_max)
            if in_sync and k_new and d_rate > 0.6 * plain:
                return self._decide(Plan(DraftSource.DRAFT, k_new), probe=True)
        # A margin over plain: the models are estimates on a noisy machine, and every
        # switch from plain to drafting pays for catching the draft up.
        bar = plain * (1.0 + MARGIN)
        if l_rate > max(bar, d_rate):
            return self._decide(Plan(DraftSource.LOOKUP, l_k, inp.lookup_tokens[:l_k]))
        if d_rate > bar:
            return self._decide(self._shape(k_max, plain))
        return self._decide(Plan(DraftSource.NONE, 0))

    def _unmeasured_k(self, k_max: int) -> int:
        """A draft length whose verify batch has not been timed enough yet (0: none).

        Verify time can jump between batch sizes, so each length up to the maximum
        is measured a few times before the model is trusted (once per pair and
        machine: the measurements are saved).
        """
        for k in range(1, k_max + 1):
            if self.cost.verify_n.get(k + 1, 0) < MEASURED:
                return k
        return 0

    def _shape(self, k_max: int, plain: float) -> Plan:
        """Chain or tree: a tree is tried twice, then every 32 draft steps, and used while
        its measured rate beats both the chain's and plain decoding's."""
        chain = Plan(DraftSource.DRAFT, k_max)
        if self.cfg.tree_budget <= 1:
            return chain
        self.draft_steps += 1
        c_rate, t_rate = self.shape_rate.get("draft"), self.shape_rate.get("tree")
        if c_rate is None:
            return chain
        if t_rate is None or self.tree_tries < 2 or self.draft_steps % 32 == 0:
            self.tree_tries += 1
            return Plan(DraftSource.TREE, self.cfg.tree_budget)
        return Plan(DraftSource.TREE, self.cfg.tree_budget) if t_rate > max(c_rate, plain) else chain

    def _lookup_untried(self, inp: PlanInput) -> bool:
        """A match of 3+ tokens whose length has been judged fewer than 4 times."""
        return (
            bool(inp.lookup_tokens) and inp.lookup_match >= 3
            and self.acc.lookup_tot.get(inp.lookup_match, 0.0) < 4
        )

    def _decide(self, plan: Plan, probe: bool = False) -> Plan:
        self._probe = probe
        if plan.source == DraftSource.DRAFT:
            t_d = self.cost.draft or 0.0
            self._step = {"E": 1.0, "P": 1.0, "D": self.cost.catchup_time(self._lag) + t_d,
                          "k": float(plan.k)}
        return plan

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        if p_top < self.cfg.p_min:
            return False, False
        if self._probe:  # a probe measures: keep what it drafts
            return True, True
        st = self._step
        v1 = self.cost.verify_time(1) or 0.0
        t_d = self.cost.draft or 0.0

        def v(n: int) -> float:
            return self.cost.verify_time(n) or v1 * (1 + 0.5 * (n - 1))

        a = self.acc.predict(p_top, entropy)
        p_new = st["P"] * a
        without = st["E"] / (st["D"] + v(i + 1))
        with_it = (st["E"] + p_new) / (st["D"] + v(i + 2))
        if with_it < without:
            return False, False
        st["E"] += p_new
        st["P"] = p_new
        if i + 1 >= st["k"]:
            return True, False
        optimistic = (st["E"] + p_new * a) / (st["D"] + t_d + v(i + 3))
        more = optimistic > st["E"] / (st["D"] + v(i + 2))
        if more:
            st["D"] += t_d
        return True, more

    # -- learning ------------------------------------------------------------

    def observe(self, outcome: Outcome) -> None:
        rec = outcome.record
        if outcome.source in (DraftSource.DRAFT, DraftSource.TREE) and rec.drafted:
            rate = rec.emitted / max(rec.draft_s + rec.verify_s + rec.overhead_s, 1e-9)
            key = DraftSource(outcome.source).value
            old = self.shape_rate.get(key, rate)
            self.shape_rate[key] = old + 0.2 * (rate - old)
        if outcome.source == DraftSource.TREE:
            return
        self.cost.observe_verify(rec.drafted + 1, rec.verify_s)
        if rec.drafted == 0:
            self.since_plain = 0
        if outcome.source == DraftSource.DRAFT and rec.drafted:
            self.cost.observe_draft(rec.draft_decodes, rec.catchup, rec.draft_s)
            self.acc.observe(outcome.top_probs, outcome.entropies, outcome.n_accepted)
            if self._probe and self._probe_left == 0:
                # the probe's last step: back off further if drafting still does not pay
                d_rate, _ = self._draft_rate(self.cfg.draft_max)
                v1 = self.cost.verify_time(1)
                pays = v1 is not None and d_rate > 1.0 / v1
                self.probe_every = PROBE_FIRST if pays else min(self.probe_every * 2, PROBE_MAX)
        elif outcome.source == DraftSource.LOOKUP and rec.drafted:
            self.acc.observe_lookup(outcome.lookup_match, rec.drafted, outcome.n_accepted)

    def sync_draft_at_prefill(self) -> bool:
        """Feed the prompt to the draft up front while drafting pays, or to probe.

        Probing happens at the start of a reply, when the draft has just seen the
        prompt: later in a reply, catching the draft up on everything it skipped
        would cost more than the probe can tell. A probe that finds drafting
        still does not pay doubles the number of replies until the next one.
        """
        if not self.allow_draft:
            return False
        v1 = self.cost.verify_time(1)
        self._lag = 1
        if v1 is None or self.cost.draft is None:
            self._probe_left = PROBE_STEPS
            return True
        if self._draft_rate(self.cfg.draft_max)[0] > (1.0 + MARGIN) / v1:
            return True
        if not self._could_pay(v1):
            return False  # a probe can only learn acceptance, and even 100% would lose
        self.replies_since_probe += 1
        if self.replies_since_probe >= self.probe_every:
            self.replies_since_probe = 0
            self._probe_left = PROBE_STEPS
            return True
        return False

    def _could_pay(self, v1: float) -> bool:
        """Whether some chain length would beat plain decoding were every draft token
        accepted (the measured costs alone decide: on a compute-bound target the
        draft can cost more than it could ever save, and probing it is pure loss)."""
        d = self.cost.draft or 0.0
        for k in range(1, self.cfg.draft_max + 1):
            v = self.cost.verify_time(k + 1) or v1 * (1 + 0.5 * k)
            if (k + 1) / (k * d + v) > (1.0 + MARGIN) / v1:
                return True
        return False

    def finish(self) -> None:
        self.save()

    # -- persistence ---------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        return {
            "version": 1,
            "verify": {str(k): v for k, v in self.cost.verify.items()},
            "verify_n": {str(k): min(v, 20) for k, v in self.cost.verify_n.items()},
            "draft": self.cost.draft,
            "catchup_per_token": self.cost.catchup_per_token,
            "acc": {str(k): v for k, v in self.acc.acc.items()},
            "tot": {str(k): v for k, v in self.acc.tot.items()},
            "lookup_acc": {str(k): v for k, v in self.acc.lookup_acc.items()},
            "lookup_tot": {str(k): v for k, v in self.acc.lookup_tot.items()},
            "first_rate": self.acc.first_rate,
            "shape_rate": self.shape_rate,
        }

    def load(self, path: Path) -> None:
        """Read the saved models. The state is a cache: a file that is not exactly what
        :meth:`to_dict` writes is discarded with a log line, and the policy starts fresh."""
        try:
            state = _checked_state(json.loads(path.read_text("utf-8")))
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("discarding bad policy state %s: %s", path, exc)
            return
        if state is None:
            return
        (self.cost.verify, self.cost.verify_n, self.cost.draft, self.cost.catchup_per_token,
         self.acc.acc, self.acc.tot, self.acc.lookup_acc, self.acc.lookup_tot,
         self.acc.first_rate, self.shape_rate) = state

    def save(self) -> None:
        if self.state_path is None:
            return
        try:
            self.state_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.to_dict()), "utf-8")
            tmp.replace(self.state_path)
        except OSError as exc:
            log.warning("could not save policy state %s: %s", self.state_path, exc)


_State = tuple[dict[int, float], dict[int, int], float | None, float | None, dict[int, float],
               dict[int, float], dict[int, float], dict[int, float], float, dict[str, float]]


def _checked_state(d: object) -> _State | None:
    """The saved state as typed values, or None for another version; raises on anything
    else (a list, text where a time belongs, NaN, a negative count)."""
    if not isinstance(d, dict):
        raise TypeError(f"expected a JSON object, found {type(d).__name__}")
    if d.get("version") != 1:
        return None

    def num(v: object, what: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{what} = {v!r} is not a non-negative number")
        return float(v)

    def table(key: str) -> dict[int, float]:
        t = d[key]
        if not isinstance(t, dict):
            raise TypeError(f"{key} is not an object")
        return {int(k): num(v, key) for k, v in t.items()}

    def optional(key: str) -> float | None:
        return None if d[key] is None else num(d[key], key)

    first_rate = num(d["first_rate"], "first_rate")
    if first_rate > 1.0:
        raise ValueError(f"first_rate = {first_rate} is not a probability")
    shapes = d.get("shape_rate", {})
    if not isinstance(shapes, dict):
        raise TypeError("shape_rate is not an object")
    return (table("verify"), {k: int(v) for k, v in table("verify_n").items()},
            optional("draft"), optional("catchup_per_token"), table("acc"), table("tot"),
            table("lookup_acc"), table("lookup_tot"), first_rate,
            {str(k): num(v, "shape_rate") for k, v in shapes.items()})
