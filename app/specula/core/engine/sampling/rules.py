"""Sampling settings, logits -> probabilities, and the exact acceptance rules.

Two exact rules for sampled replies (greedy is the limit of both):

* ``Rule.COUPLED`` (drafter-invariant sampling, Daliri, Musco & Suresh,
  arXiv 2408.07978): the token at absolute position t is the Gumbel-max choice
  argmax_x(log p_t(x) + G(seed, t, x)) with noise from a counter-based hash of
  (seed, t, x). The draft proposes with the same noise over its own candidates
  and a proposal is accepted while the target's choice equals it, so the reply
  is a function of the seed and the target alone: every mode gives plain
  decoding's text for a seed.
* ``Rule.REJECTION`` (Leviathan et al. 2023): accept a draft token x ~ q with
  probability min(1, p(x)/q(x)), else sample the residual normalize(max(0, p - q)).
  p and q must be the *same* transform of each model's logits.

The functions the engine uses are looked up through this module at call time
(``sampling.residual(...)``) so that tests can monkeypatch one to inject a bug.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum

import numpy as np
import numpy.typing as npt

from specula.core.engine.sampling import topk

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

RANDOM_SEED = -1  # what the GUI and the API send for "random"
MAX_TOP_LOGPROBS = 20  # OpenAI's limit for top_logprobs
SEED_LIMIT = 2**31  # drawn seeds stay below this, so that any spin box can take one back


class Rule(str, Enum):
    """How a sampled reply accepts draft tokens (both keep the target's distribution)."""

    COUPLED = "coupled"  # seed-coupled Gumbel-max: the same text for a seed in every mode
    REJECTION = "rejection-sampling"  # min(1, p/q) with the residual; higher acceptance


DEFAULT_RULE = Rule.COUPLED


class AcceptanceRule(str, Enum):
    """The rule a verification actually applies (what a reply's stats report): the
    requested :class:`Rule`, or what the settings leave of it."""

    GREEDY = "greedy"  # temperature <= 0: the target's argmax
    COUPLED = Rule.COUPLED.value
    REJECTION = Rule.REJECTION.value
    SAMPLE_AND_MATCH = "sample-and-match"  # sample the target, keep a matching draft token


@dataclass
class SamplingParams:
    """Generation settings. ``temperature <= 0`` means greedy (argmax).

    ``seed``: None or -1 draw a fresh seed per reply (reported as
    ``GenerationStats.seed``); any other negative value is an error.

    ``grammar`` (GBNF text, start symbol ``grammar_root``) constrains every token the
    target chooses or verifies (see specula.core.engine.grammar.state); ``logprobs`` asks for
    each token's logprob and that many top alternatives (0..20) in its TokenEvent.
    """

    temperature: float = 0.0
    top_k: int = 40  # 0 = off
    top_p: float = 0.95  # 1 = off
    min_p: float = 0.05  # 0 = off
    repeat_penalty: float = 1.0  # 1 = off
    repeat_last_n: int = 64  # tokens the penalty looks back on; 0 = off, -1 = the whole context
    seed: int | None = None
    max_tokens: int = 512
    stop: list[str] = field(default_factory=list)
    rule: Rule = DEFAULT_RULE
    grammar: str | None = None  # GBNF; None or "" = unconstrained
    grammar_root: str = "root"
    logprobs: int | None = None  # None: none; n: the token's logprob and n top alternatives

    def __post_init__(self) -> None:
        if self.seed is not None and self.seed < RANDOM_SEED:
            raise ValueError(
                f"seed must be -1 (a fresh random seed) or a number >= 0, not {self.seed}"
            )
        self.rule = Rule(self.rule)
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(
                f"logprobs must be None or 0..{MAX_TOP_LOGPROBS} top alternatives, not {self.logprobs}"
            )

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @property
    def has_penalties(self) -> bool:
        """Settings that depend on the history, which rejection sampling cannot express."""
        return self.repeat_penalty != 1.0 and self.repeat_last_n != 0

    @property
    def acceptance_rule(self) -> AcceptanceRule:
        """The rule a chain verification uses (sample-and-match is the rejection rule's
        fallback with a repetition penalty)."""
        if self.greedy:
            return AcceptanceRule.GREEDY
        if self.rule is Rule.COUPLED:
            return AcceptanceRule.COUPLED
        return AcceptanceRule.SAMPLE_AND_MATCH if self.has_penalties else AcceptanceRule.REJECTION

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["rule"] = self.rule.value
        return d


def resolve_seed(seed: int | None) -> int:
    """The seed a reply runs with: ``seed`` itself, or a fresh one for None / -1."""
    if seed is None or seed == RANDOM_SEED:
        return secrets.randbelow(SEED_LIMIT)
    if seed < 0:
        raise ValueError(f"seed must be -1 (a fresh random seed) or a number >= 0, not {seed}")
    return int(seed)


def penalty_window(tokens: Sequence[int], params: SamplingParams) -> list[int]:
    """A copy of the tokens the repetition penalty reads: the last ``repeat_last_n``
    (llama.cpp's meaning: 0 turns the penalty off, -1 reads the whole context), so that a
    step copies that many tokens, not the whole chat."""
    if not params.has_penalties:
        return []
    n = params.repeat_last_n
    return list(tokens) if n < 0 else list(tokens[-n:])


def apply_penalties(logits: F32, history: list[int], params: SamplingParams) -> F32:
    """llama.cpp-style repetition penalty over the last ``repeat_last_n`` tokens (a copy)."""
    if not params.has_penalties or not history:
        return logits
    out: F32 = logits.copy()
    recent = np.unique(np.asarray(penalty_window(history, params), dtype=np.int64))
    recent = recent[recent < out.shape[0]]
    vals = out[recent]
    out[recent] = np.where(vals > 0, vals / params.repeat_penalty, vals * params.repeat_penalty)
    return out


def candidates(logits: F32, params: SamplingParams) -> tuple[I64, F64]:
    """The sampling distribution on its candidates: (token ids, probabilities summing to 1).

    Order as llama.cpp's default chain: top-k, top-p, min-p, then temperature; top-p
    and min-p see the softmax at temperature 1 of what is left. Greedy gives the argmax
    alone. With top-k or top-p on, ids come best first, equal logits ranking the lower
    id first (as a stable sort of the vocabulary would). With top-k on, only one partial selection touches the
    whole vocabulary (:func:`topk.top_k_ids`); the rest works on the k candidates.
    """
    n = logits.shape[0]
    if params.greedy:
        return np.array([topk.argmax(logits)], dtype=np.int64), np.ones(1)
    if 0 < params.top_k < n and params.top_k <= LIST_TOP_K:
        il, pl = _candidate_lists(logits, params)
        return np.array(il, dtype=np.int64), np.array(pl)
    ordered = True  # idx best first: the largest logit is the first
    if 0 < params.top_k < n:
        idx = topk.top_k_ids(logits, params.top_k)
    elif params.top_p < 1.0:  # top-k off: top-p needs the whole vocabulary in order
        idx = (-logits).argsort(kind="stable").astype(np.int64)
    else:
        idx, ordered = np.arange(n, dtype=np.int64), False
    xs = logits[idx].astype(np.float64)
    top = float(xs[0]) if ordered else float(xs.max())
    if params.top_p < 1.0 or params.min_p > 0.0:
        e = np.exp(xs - top)
        if params.top_p < 1.0:  # idx is in descending order here
            c = e.cumsum()
            cut = int(c.searchsorted(params.top_p * c[-1])) + 1
            idx, xs, e = idx[:cut], xs[:cut], e[:cut]
        if params.min_p > 0.0:  # p >= min_p * p_max, and p_max is e = 1 before normalising
            if ordered:  # e descends: the kept tokens are a prefix
                cut = int(np.count_nonzero(e >= params.min_p))
                idx, xs = idx[:cut], xs[:cut]
            else:
                sel = e >= params.min_p
                idx, xs = idx[sel], xs[sel]
    e = np.exp((xs - top) / params.temperature)
    return idx, e / topk._SUM(e, axis=None)


LIST_TOP_K = 64  # a top-k up to this many is transformed in Python floats (see below)


def _candidate_lists(logits: F32, params: SamplingParams) -> tuple[list[int], list[float]]:
    """:func:`candidates` for a small top-k, as Python lists: the transform on some 40
    floats in plain arithmetic (the same steps as the array path: the cumulative sum in
    order, the first index reaching top_p of it, the leading run at min_p or above),
    since right after a decode each small numpy call costs several microseconds."""
    ids, xs = topk.top_k_lists(logits, params.top_k)
    top = xs[0]
    if params.top_p < 1.0 or params.min_p > 0.0:
        es = [math.exp(x - top) for x in xs]
        cut = len(es)
        if params.top_p < 1.0:
            lim = params.top_p * _running_total(es)
            run = 0.0
            for i, v in enumerate(es):
                run += v
                if run >= lim:
                    cut = i + 1
                    break
        if params.min_p > 0.0:  # e descends: the kept tokens are a prefix
            kept = 0
            while kept < cut and es[kept] >= params.min_p:
                kept += 1
            cut = kept
        ids, xs = ids[:cut], xs[:cut]
    t = params.temperature
    e = [math.exp((x - top) / t) for x in xs]
    z = sum(e)
    return ids, [v / z for v in e]


def _running_total(values: list[float]) -> float:
    """The last value of the cumulative sum, added in order (as ``cumsum`` does)."""
    run = 0.0
    for v in values:
        run += v
    return run


def coupled_pick(logits: F32, params: SamplingParams, seed: int, position: int) -> int:
    """``coupled_choice(*candidates(logits, params), seed, position)``, without making
    arrays of the candidates when the transform ran on lists."""
    if params.greedy or not (0 < params.top_k < logits.shape[0] and params.top_k <= LIST_TOP_K):
        return coupled_choice(*candidates(logits, params), seed, position)
    il, pl = _candidate_lists(logits, params)
    if len(il) == 1:
        return il[0]
    if len(il) <= SMALL_CHOICE:
        return _choose_lists(il, pl, seed, position)
    return coupled_choice(np.array(il, dtype=np.int64), np.array(pl), seed, position)


def densify(ids: I64, p: F64, n: int) -> F32:
    out = np.zeros(n, dtype=np.float32)
    out[ids] = p
    return out


def probs(logits: F32, params: SamplingParams) -> F32:
    """*Patch point*: the target's sampling distribution, dense over its vocabulary."""
    ids, p = candidates(logits, params)
    return densify(ids, p, logits.shape[0])


def draft_probs(logits: F32, params: SamplingParams) -> F32:
    """*Patch point*: the draft's q (the same transform as the target's, as the rule needs)."""
    return probs(logits, params)


def draft_candidates(logits: F32, params: SamplingParams) -> tuple[I64, F64]:
    """The draft's candidates under the coupled rule (the same transform)."""
    return candidates(logits, params)


def sample(p: F32, rng: np.random.Generator) -> int:
    """*Patch point*: one draw from ``p`` (inverse CDF; robust to float rounding)."""
    nz = p.nonzero()[0]  # the support: a few candidates, not the vocabulary
    if nz.shape[0] == 0:
        return int(p.shape[0] - 1)
    # the same draw as over the dense cumulative sum (adding zeros changes no partial sum)
    c = p[nz].cumsum(dtype=np.float64)
    u = rng.random() * c[-1]
    return int(nz[min(int(c.searchsorted(u, side="right")), nz.shape[0] - 1)])


def residual(p: F32, q: F32 | None, token: int = -1) -> F32:
    """*Patch point*: normalize(max(0, p - q)), where to sample after a rejected draft token.

    ``q=None`` stands for a deterministic proposal (one-hot at ``token``).
    """
    nz = p.nonzero()[0]  # max(0, p - q) is 0 wherever p is: work on p's support
    if q is None:
        r = p[nz].astype(np.float64)
        r[nz == token] = 0.0
    else:
        r = np.maximum(p[nz].astype(np.float64) - q[nz].astype(np.float64), 0.0)
    s = topk._SUM(r, axis=None)
    if s <= 0.0:  # p == q: a rejection had probability 0; p itself is the answer
        return p
    res = np.zeros(p.shape[0], dtype=np.float32)
    res[nz] = r / s
    return res


def accept_draft_token(p: F32, q: F32 | None, token: int, rng: np.random.Generator) -> bool:
    """*Patch point*: accept a token drawn from q with probability min(1, p/q).

    ``q=None`` is a deterministic proposal (q one-hot at ``token``): accept with p(token).
    """
    qt = 1.0 if q is None else float(q[token])
    if qt <= 0.0:
        return False
    return bool(rng.random() < min(1.0, float(p[token]) / qt))


def bonus_probs(p_next: F32, q_next: F32 | None) -> F32:
    """*Patch point*: where the bonus token after a fully accepted chain comes from: p."""
    return p_next


# -- the coupled rule ------------------------------------------------------------------

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: a bijective 64-bit mix (Steele, Lea & Flood 2014).

    Arithmetic on integer arrays wraps around without a warning; numpy scalars (and
    0-d arrays, whose results are scalars) warn, so only they pay for ``np.errstate``
    (~14 us right after a decode, more than the mix itself)."""
    if isinstance(x, np.ndarray) and x.ndim > 0:
        return _mix64(x)
    with np.errstate(over="ignore"):
        return _mix64(x)


def _mix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    out: npt.NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return out


_M64_INT = 0xFFFFFFFFFFFFFFFF


def _splitmix64_int(x: int) -> int:
    """:func:`_splitmix64` of one value, in Python integers (bit for bit the same)."""
    z = (x + 0x9E3779B97F4A7C15) & _M64_INT
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64_INT
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64_INT
    return z ^ (z >> 31)


def gumbel_noise(seed: int, position: int, ids: I64 | list[int]) -> F64 | list[float]:
    """*Patch point*: Gumbel(0, 1) noise keyed by (seed, absolute position, token id).

    Counter-based: the noise of one (seed, position, token) never depends on
    which other tokens are asked about, so the draft (over its candidates) and
    the target (over its own) see the same value for a shared token.

    ``ids`` as a list gives a list, computed in Python integers: for the few
    candidates a position usually has that is cheaper than the ~20 numpy calls of
    the array path, each several microseconds right after a decode (break-even at
    ~32 ids, measured). Both paths compute the same 64-bit hash and the same
    uniform; only the last ``log`` may differ in its final bit.
    """
    # the (seed, position) key in Python integers (the same 64-bit arithmetic, without
    # a dozen numpy calls on one-element arrays per position); the ids vectorised
    key = _splitmix64_int(_splitmix64_int(seed & _M64_INT) ^ (position & _M64_INT))
    if isinstance(ids, list):
        return [_gumbel_int(key ^ t) for t in ids]
    h = _splitmix64(np.uint64(key) ^ np.asarray(ids, dtype=np.uint64))
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) * _INV_2_53  # (0, 1)
    out: F64 = -np.log(-np.log(u))
    return out


_INV_2_53 = 1.0 / 9007199254740992.0


def _gumbel_int(x: int) -> float:
    """The noise of one hashed key: splitmix64 (inlined), its top 53 bits as a uniform
    in (0, 1), then -log(-log(u))."""
    z = (x + 0x9E3779B97F4A7C15) & _M64_INT
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64_INT
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64_INT
    z ^= z >> 31
    return -math.log(-math.log(((z >> 11) + 0.5) * _INV_2_53))


SMALL_CHOICE = 32  # candidates up to this many are chosen among in Python (see gumbel_noise)


def coupled_choice(ids: I64, p: F64, seed: int, position: int) -> int:
    """The Gumbel-max choice among candidates: argmax log p(x) + G(seed, position, x)."""
    n = ids.shape[0]
    if n == 1:
        return int(ids[0])
    if n <= SMALL_CHOICE:
        return _choose_lists(ids.tolist(), p.tolist(), seed, position)
    g = gumbel_noise(seed, position, ids)
    # log(0) would be -inf (and a warning that np.errstate costs ~14 us to silence right
    # after a decode): a zero probability is raised to the smallest double instead, whose
    # log (-744.4) plus any noise (below 38) stays under every positive candidate's score
    # (log p >= log(1 / n) > -12, noise > -4): the same argmax.
    score = np.log(np.maximum(p, _TINY)) + g
    return int(ids[int(score.argmax())])


def _choose_lists(ids: list[int], p: list[float], seed: int, position: int) -> int:
    """:func:`coupled_choice` on Python lists (a few candidates)."""
    g = gumbel_noise(seed, position, ids)
    best, best_score = 0, -math.inf
    for i, pi in enumerate(p):
        score = math.log(pi if pi > _TINY else _TINY) + g[i]
        if score > best_score:  # strict: the first of equal scores, as argmax
            best, best_score = i, score
    return ids[best]


_TINY = float(np.finfo(np.float64).smallest_subnormal)
