"""Request bodies of the OpenAI API -> engine settings, with OpenAI-style errors.

Every field is checked for its type and range here, so that a bad request is
answered with a 400 and an ``{"error": {...}}`` object that names the
offending ``param``, and nothing malformed ever reaches the engine thread.
Fields the engine cannot honour (``n > 1``, non-zero frequency/presence
penalties) are refused rather than silently ignored. Structured replies
(``response_format``, ``tools``) are read in server/structured.py, logprobs in
server/logprobs.py, messages in server/messages.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.sampling.rules import Rule, SamplingParams
from specula.server.errors import OpenAIError, bad
from specula.server.logprobs import parse_logprobs
from specula.server.messages import parse_messages
from specula.server.structured import Structure, parse_structure

MAX_STOP_STRINGS = 4  # as the OpenAI API


@dataclass
class GenerationRequest:
    """One chat or text completion, validated and mapped to engine settings."""

    kind: str  # "chat" | "text"
    model: str
    sampling: SamplingParams
    spec: SpecConfig
    stream: bool = False
    include_usage: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)
    prompt: str | list[int] = ""
    rendered: str | None = None  # the chat template's output, when rendered off the engine thread
    structure: Structure = field(default_factory=Structure)
    logprobs: int | None = None  # alternatives listed per token; None: no logprobs


def _typed(body: dict[str, Any], name: str, kinds: tuple[type, ...], what: str,
           default: Any = None) -> Any:
    """``body[name]`` if it has one of ``kinds`` (bools are not numbers), else a 400."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds:
        raise bad(name, f"'{name}' must be {what}, not a boolean.", "invalid_type")
    if not isinstance(value, kinds):
        raise bad(name, f"'{name}' must be {what}, not {type(value).__name__}.", "invalid_type")
    return value


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    raw = _typed(body, name, (int, float), "a number", default)
    try:
        value = float(raw)
    except OverflowError:  # an integer too large for a float
        value = float("inf") if raw > 0 else float("-inf")
    if not lo <= value <= hi:
        raise bad(name, f"'{name}' must be between {lo:g} and {hi:g}, got {value:g}.")
    return value


def _integer(body: dict[str, Any], name: str, default: int | None, lo: int,
             hi: int | None = None) -> int | None:
    value = _typed(body, name, (int,), "an integer", default)
    if value is None:
        return None
    if value < lo or (hi is not None and value > hi):
        rng = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise bad(name, f"'{name}' must be {rng}, got {value}.")
    return int(value)


def _seed(body: dict[str, Any], default: int | None) -> int | None:
    """OpenAI's int64 seeds; -1 (as llama.cpp's servers) or none: a fresh seed per reply."""
    seed = _integer(body, "seed", default, -1, 2**63 - 1)
    return None if seed == -1 else seed


def _stop(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise bad("stop", "'stop' must be a string or a list of strings.", "invalid_type")
    if len(stop) > MAX_STOP_STRINGS:
        raise bad("stop", f"'stop' takes at most {MAX_STOP_STRINGS} strings.")
    return [s for s in stop if s]


def _refuse_unsupported(body: dict[str, Any]) -> None:
    if _integer(body, "n", 1, 1) != 1:
        raise bad("n", "Only n=1 is supported: one reply per request.", "unsupported_value")
    bias = body.get("logit_bias")
    if bias is not None and not isinstance(bias, dict):
        raise bad("logit_bias", "'logit_bias' must be an object of token ids to biases.",
                  "invalid_type")
    if bias:  # accepted and ignored would change nothing the client asked for, silently
        raise bad("logit_bias", "'logit_bias' is not supported; a grammar ('specula.grammar') "
                  "can forbid tokens.", "unsupported_value")
    for name in ("frequency_penalty", "presence_penalty"):
        if _number(body, name, 0.0, -2.0, 2.0) != 0.0:
            raise bad(name, f"'{name}' is not supported; use 'repeat_penalty'.",
                      "unsupported_value")


def sampling_from(body: dict[str, Any], defaults: SamplingParams) -> SamplingParams:
    """OpenAI fields (plus top_k, min_p, repeat_penalty) over the server's defaults."""
    _refuse_unsupported(body)
    max_tokens = _integer(body, "max_completion_tokens", None, 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", defaults.max_tokens, 1)
    return replace(
        defaults,
        temperature=_number(body, "temperature", defaults.temperature, 0.0, 2.0),
        top_p=_number(body, "top_p", defaults.top_p, 0.0, 1.0),
        top_k=int(_integer(body, "top_k", defaults.top_k, 0) or 0),
        min_p=_number(body, "min_p", defaults.min_p, 0.0, 1.0),
        repeat_penalty=_penalty(body, defaults.repeat_penalty),
        seed=_seed(body, defaults.seed),
        max_tokens=max_tokens or defaults.max_tokens,
        stop=_stop(body),
        rule=_rule(body, defaults.rule),
    )


def _penalty(body: dict[str, Any], default: float) -> float:
    """``repeat_penalty`` in (0, 10]: it divides a positive logit, so 0 is no penalty
    but a division by zero (1 is off)."""
    value = _number(body, "repeat_penalty", default, 0.0, 10.0)
    if value <= 0.0:
        raise bad("repeat_penalty", f"'repeat_penalty' must be above 0 and at most 10 (1 is "
                  f"off), got {value:g}.")
    return value


def _rule(body: dict[str, Any], default: Rule) -> Rule:
    """``"specula": {"rule": "coupled" | "rejection-sampling"}``: the exact acceptance rule."""
    extra = body.get("specula")
    if not isinstance(extra, dict) or "rule" not in extra:
        return default  # a malformed 'specula' field is refused by spec_from
    value = extra["rule"]
    choices = [r.value for r in Rule]
    if not isinstance(value, str) or value not in choices:
        raise bad("specula.rule", f"'rule' must be one of {', '.join(choices)}.")
    return Rule(value)


def spec_from(body: dict[str, Any], defaults: SpecConfig) -> SpecConfig:
    """The extra ``"specula": {mode, draft_max, draft_min, p_min, rule, grammar}`` body field
    (``rule`` is read with the sampling settings, by :func:`sampling_from`; ``grammar``
    by server/structured.py)."""
    extra = body.get("specula")
    if extra is None:
        return defaults
    if not isinstance(extra, dict):
        raise bad("specula", "'specula' must be an object.", "invalid_type")
    unknown = set(extra) - {"mode", "draft_max", "draft_min", "p_min", "rule", "grammar"}
    if unknown:
        raise bad("specula", f"Unknown 'specula' fields: {', '.join(sorted(unknown))}.")
    mode = _typed(extra, "mode", (str,), "a string", defaults.mode.value)
    if mode not in {m.value for m in Mode}:
        raise bad("specula.mode", f"'mode' must be one of {', '.join(m.value for m in Mode)}.")
    try:
        return replace(
            defaults, mode=Mode(mode),
            draft_max=int(_integer(extra, "draft_max", defaults.draft_max, 0, 32) or 0),
            draft_min=int(_integer(extra, "draft_min", defaults.draft_min, 0, 32) or 0),
            p_min=_number(extra, "p_min", defaults.p_min, 0.0, 1.0),
        )
    except OpenAIError as exc:
        exc.param = f"specula.{exc.param}"
        raise


def _prompt(body: dict[str, Any]) -> str | list[int]:
    prompt = body.get("prompt")
    if prompt is None:
        raise bad("prompt", "'prompt' is required.", "missing_required_parameter")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt):
        return [int(t) for t in prompt]
    raise bad("prompt", "'prompt' must be a string, a list of one string or a list of token ids.",
              "invalid_type")


def _common(body: dict[str, Any]) -> tuple[str, bool, bool]:
    model = body.get("model")
    if model is None:
        raise bad("model", "'model' is required.", "missing_required_parameter")
    if not isinstance(model, str):
        raise bad("model", "'model' must be a string.", "invalid_type")
    stream = _typed(body, "stream", (bool,), "a boolean", False)
    opts = _typed(body, "stream_options", (dict,), "an object", {})
    include_usage = _typed(opts, "include_usage", (bool,), "a boolean", False)
    return model, bool(stream), bool(include_usage)


def parse_request(kind: str, body: dict[str, Any], sampling: SamplingParams,
                  spec: SpecConfig) -> GenerationRequest:
    """Validate a /v1/chat/completions ("chat") or /v1/completions ("text") body."""
    model, stream, include_usage = _common(body)
    req = GenerationRequest(kind, model, sampling_from(body, sampling), spec_from(body, spec),
                            stream, include_usage)
    req.structure = parse_structure(body, kind)
    req.logprobs = parse_logprobs(body, kind)
    req.sampling = replace(req.sampling, grammar=req.structure.grammar, grammar_root="root",
                           logprobs=req.logprobs)
    if kind == "chat":
        req.messages = parse_messages(body)
    else:
        if body.get("echo") or body.get("suffix"):
            raise bad("echo" if body.get("echo") else "suffix", "'echo' and 'suffix' are not "
                      "supported.", "unsupported_value")
        req.prompt = _prompt(body)
    return req
