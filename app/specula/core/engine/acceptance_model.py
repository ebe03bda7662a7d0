"""How likely the target is to accept what a drafter proposes, learnt per pair.

Draft-model tokens: Beta counts per bin of the draft's confidence (top
probability) and entropy, which the per-token cut-off uses. Prompt lookup: per
matched n-gram length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

P_EDGES = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.995)
ENTROPY_SPLIT = 1.0  # nats


def _bin(p_top: float, entropy: float) -> int:
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

