"""How likely the target is to accept what a drafter proposes, learnt per pair.

Draft-model tokens, two views: the per-token rate of the pair (what a chain of
k tokens yields, for choosing between drafting and plain decoding), and Beta
counts per bin of the draft's confidence (top probability) and entropy (for
cutting a chain at a token the draft itself doubts). Prompt lookup: per matched
n-gram length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

P_EDGES = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.995)
ENTROPY_SPLIT = 1.0  # nats
# Per-token rate: a new pair starts from RATE_PRIOR as if RATE_PRIOR_N tokens had been
# judged (a few steps overrule it), and each step's counts fade by RATE_DECAY so the rate
# follows the conversation (about the last 1 / (1 - RATE_DECAY) steps weigh).
RATE_PRIOR, RATE_PRIOR_N = 0.8, 3.0
RATE_DECAY = 0.95
# Acceptance by depth in the chain: a draft that got token j right usually gets j + 1 right
# too (runs of copied code, boilerplate), so a chain yields more than a constant per-token
# rate says. Each depth has its own faded counts, drawn toward the pooled rate.
DEPTHS = 16
# Until the pair has been judged on EVIDENCE_N draft tokens (faded counts: a new pair's
# first probe steps), a verdict that drafting does not pay must hold at one standard error
# above the estimated rate: three probe steps that meet one hard span of text (8 of 8, then
# 0 and 1) put the rate at 0.81 where the text gives 0.90, and a verdict taken on them
# kept a new F16 pair plain for three replies (0.68-0.76x of the best fixed chain).
EVIDENCE_N = 24.0
DEPTH_PRIOR_N = 2.0
LOOKUP_POOL_N = 2.0  # a lookup match code's prior: lookup's pooled rate, as if seen this often


def confidence_bin(p_top: float, entropy: float) -> int:
    b = sum(p_top >= e for e in P_EDGES)
    return b * 2 + (1 if entropy >= ENTROPY_SPLIT else 0)


@dataclass
class AcceptanceModel:
    """P(draft token accepted | draft confidence), Beta counts per bin."""

    acc: dict[int, float] = field(default_factory=dict)
    tot: dict[int, float] = field(default_factory=dict)
    lookup_acc: dict[int, float] = field(default_factory=dict)
    lookup_tot: dict[int, float] = field(default_factory=dict)
    first_rate: float = 0.7  # running acceptance of a step's first draft token
    rate_acc: float = 0.0  # faded count of accepted draft tokens
    rate_judged: float = 0.0  # faded count of judged ones (accepted, and each first rejection)
    depth_acc: list[float] = field(default_factory=lambda: [0.0] * DEPTHS)  # the same, by depth
    depth_judged: list[float] = field(default_factory=lambda: [0.0] * DEPTHS)

    @property
    def token_rate(self) -> float:
        """Per-token acceptance of a chain: the maximum-likelihood rate of a geometric
        run length cut at k (accepted / judged), drawn toward the prior while little is known."""
        return (self.rate_acc + RATE_PRIOR * RATE_PRIOR_N) / (self.rate_judged + RATE_PRIOR_N)

    def optimistic_rate(self) -> float | None:
        """The per-token rate one standard error above the estimate while the pair has
        been judged on fewer than EVIDENCE_N draft tokens; None once it has."""
        if self.rate_judged >= EVIDENCE_N:
            return None
        a = self.token_rate
        return min(1.0, a + math.sqrt(a * (1.0 - a) / (self.rate_judged + RATE_PRIOR_N)))

    def hazard(self, j: int) -> float:
        """P(the draft's token at depth j is accepted | every token before it was)."""
        a = self.token_rate
        if j >= DEPTHS:
            return a
        return (self.depth_acc[j] + a * DEPTH_PRIOR_N) / (self.depth_judged[j] + DEPTH_PRIOR_N)

    def expected(self, k: int) -> float:
        """Tokens a step yields with a chain of k drafted (the target's own token included)."""
        return self.expected_upto(k)[-1] if k > 0 else 1.0

    def expected_upto(self, k_max: int) -> list[float]:
        """``[expected(1), ..., expected(k_max)]`` in one pass (the same sums, term by term)."""
        out: list[float] = []
        e, run = 1.0, 1.0
        for j in range(k_max):
            run *= self.hazard(j)
            e += run
            out.append(e)
        return out

    def fade(self) -> None:
        """Age the evidence by one step (the rate follows the conversation)."""
        self._scale(RATE_DECAY)

    def _scale(self, f: float) -> None:
        """Multiply the per-token and by-depth counts by ``f`` (their rates stay)."""
        self.rate_acc *= f
        self.rate_judged *= f
        self.depth_acc = [x * f for x in self.depth_acc]
        self.depth_judged = [x * f for x in self.depth_judged]

    def shrink(self, judged: float) -> None:
        """Weigh the per-token and by-depth rates as if ``judged`` tokens had made them
        (when more did): before a probe of a paused draft, so that what the probe meets
        decides, not the stretch of text that paused it."""
        if self.rate_judged <= judged:
            return
        self._scale(judged / self.rate_judged)

    def predict(self, p_top: float, entropy: float) -> float:
        b = confidence_bin(p_top, entropy)
        prior_a, prior_n = 2.0 * p_top, 2.0  # prior: the draft is calibrated
        return (self.acc.get(b, 0.0) + prior_a) / (self.tot.get(b, 0.0) + prior_n)

    def predict_lookup(self, match: int) -> float:
        """A match code's acceptance, drawn toward lookup's pooled rate over every code (a
        code seen once says little; how lookup has done on this pair says more)."""
        pooled = (sum(self.lookup_acc.values()) + 1.0) / (sum(self.lookup_tot.values()) + 2.0)
        return ((self.lookup_acc.get(match, 0.0) + LOOKUP_POOL_N * pooled)
                / (self.lookup_tot.get(match, 0.0) + LOOKUP_POOL_N))

    def observe(self, top_probs: list[float], entropies: list[float], n_accepted: int) -> None:
        # Tokens after the first rejection were never judged: count only up to it.
        for j, (p, h) in enumerate(zip(top_probs, entropies, strict=False)):
            if j > n_accepted:
                break
            b = confidence_bin(p, h)
            self.tot[b] = self.tot.get(b, 0.0) + 1.0
            if j < n_accepted:
                self.acc[b] = self.acc.get(b, 0.0) + 1.0
        if top_probs:
            self.first_rate += 0.1 * ((1.0 if n_accepted > 0 else 0.0) - self.first_rate)
            judged = min(len(top_probs), n_accepted + 1)
            self.fade()
            self.rate_acc += n_accepted
            self.rate_judged += judged
            for j in range(min(judged, DEPTHS)):
                self.depth_judged[j] += 1.0
                if j < n_accepted:
                    self.depth_acc[j] += 1.0

    def observe_lookup(self, match: int, proposed: int, n_accepted: int) -> None:
        judged = min(proposed, n_accepted + 1)
        self.lookup_tot[match] = self.lookup_tot.get(match, 0.0) + judged
        self.lookup_acc[match] = self.lookup_acc.get(match, 0.0) + n_accepted

