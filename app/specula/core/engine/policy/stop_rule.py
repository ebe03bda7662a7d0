"""The adaptive policy's stop rule: after each token the draft proposes, whether it is kept
and whether the draft proposes another, by the step's expected tokens per second.

A step's plan (``AdaptivePolicy._decide``) sets what the step holds so far: ``E`` the tokens
it is expected to yield, ``P`` the chance that every drafted token so far is accepted, ``k``
the planned length and ``D`` the seconds spent before the verify (the catch-up share, the
draft decodes, the rollback). A token is kept while the step's rate with it beats the rate
without it, or a few more tokens would (a verify curve that jumps and then runs flat); the
draft goes on while one more token, at the pair's rate at its depth, is expected to pay.
A probe keeps everything it drafts: it measures.
"""

from __future__ import annotations

from specula.core.engine.policy.rates import ExpectedRates


class StopRule(ExpectedRates):
    """``keep_drafting`` for the adaptive policy (its base; the plan sets ``_step``)."""

    _probe: bool  # the step is a probe: it keeps what it drafts
    _step: dict[str, float]  # the step so far: E, P, k and D (see the module's docstring)

    def keep_drafting(self, i: int, p_top: float, entropy: float) -> tuple[bool, bool]:
        if p_top < self.cfg.p_min:
            return False, False
        if self._probe:  # a probe measures: keep what it drafts
            return True, True
        st = self._step
        t_d = self.cost.draft or 0.0
        v = self.verify_s
        a = self.acc.predict(p_top, entropy)
        p_new = st["P"] * a
        without = st["E"] / (st["D"] + v(i + 1))
        with_it = (st["E"] + p_new) / (st["D"] + v(i + 2))
        ahead = False
        if with_it < without:
            # one more token does not pay for its verify, but a few more might: where verify
            # time jumps at a batch size and is flat after it (an F16 target without repacked
            # weights: 1 token 174 ms, 2-9 tokens 321-510 ms), a one-token look stops at the
            # first token and wastes the draft decode the plan already paid for
            if self._best_ahead(i, st["E"] + p_new, p_new, st["D"]) <= without:
                return False, False
            ahead = True
        st["E"] += p_new
        st["P"] = p_new
        if i + 1 >= st["k"]:
            return True, False
        # the next token's acceptance, its confidence not known yet: the pair's rate at that
        # depth once every token before it was accepted (runs of copied code: 0.98 from the
        # third token on in the F16 traces), not this token's own (replayed on the F16 code
        # traces: docs/lab/2026-12-01-adaptive-convergence.md, "The stop rule, replayed on
        # real traces")
        now = st["E"] / (st["D"] + v(i + 2))
        optimistic = (st["E"] + p_new * self.acc.hazard(i + 1)) / (st["D"] + t_d + v(i + 3))
        more = ahead or optimistic > now or self._best_ahead(i, st["E"], p_new, st["D"]) > now
        if more:
            st["D"] += t_d
        return True, more

    def _best_ahead(self, i: int, e: float, run: float, d: float) -> float:
        """The best expected rate of drafting on past token ``i`` (kept: ``e`` tokens expected,
        ``run`` = P(every token so far accepted), ``d`` seconds before the verify), each
        further token at the pair's rate at its depth, up to the plan's length."""
        t_d = self.cost.draft or 0.0
        best = 0.0
        for j in range(i + 1, int(self._step["k"])):
            run *= self.acc.hazard(j)
            e += run
            d += t_d
            best = max(best, e / (d + self.verify_s(j + 2)))
        return best
