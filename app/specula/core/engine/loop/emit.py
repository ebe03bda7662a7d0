"""Emission: a verification's tokens become token events, in order, until the reply
ends (end of turn, a stop string, the token limit).

UTF-8 characters split over tokens come out whole and a stop string is never
emitted in part (loop/text.py), so what a consumer is handed is always final.

Two rules keep one text for a reply on every surface and every reply valid:

* The reply's text is exactly the text of its events: a reply that ends inside a UTF-8
  character (the token limit cut it there) ends before that character, in the stream
  and in ``Done.text`` alike; the incomplete bytes are no character, and a U+FFFD in
  the stored text that the stream never showed would make the two differ.
* Stop strings never cut a grammar-constrained reply: the grammar (a JSON schema, a
  forced tool call, a client's GBNF) spans the whole reply and only the end of turn
  may follow its completion, so a stop string could only cut inside the structure and
  leave a reply that says it finished but does not parse.
"""

from __future__ import annotations

import time

from specula.core.engine.events import Event, StopReason, TokenEvent
from specula.core.engine.loop.run import ReplyRun
from specula.core.engine.loop.text import StopFilter, Utf8Stream
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.verify.result import VerifyResult


class Emitter:
    """Turns verified tokens into the events one reply hands out."""

    def __init__(self, model: Model, params: SamplingParams) -> None:
        self.utf8 = Utf8Stream()
        self.stops = StopFilter(() if params.grammar else params.stop)
        self.max_tokens = params.max_tokens
        self._is_eog, self._piece = model.is_eog, model.piece

    def emit(self, run: ReplyRun, res: VerifyResult) -> tuple[list[Event], int]:
        """Commit ``res``'s tokens to ``run`` up to where the reply ends (``run.reason``
        says why it did); (the events released, how many of them a drafter proposed)."""
        events: list[Event] = []
        from_draft = 0
        for (tok, origin, dprob), lp in zip(res.tokens, res.logprobs, strict=True):
            if self._is_eog(tok):  # the end of turn is never shown nor kept
                run.stop(StopReason.EOS)
                break
            run.committed.append(tok)
            run.generated.append(tok)
            if run.stats.ttft_s == 0.0:
                run.stats.ttft_s = time.perf_counter() - run.t_start
            ev = TokenEvent(tok, self.utf8.feed(self._piece(tok)), origin, dprob, run.step)
            if lp is not None:
                ev.logprob, ev.top_logprobs = lp
            for out in self.stops.push(ev):
                run.released.append(out.text)
                events.append(out)
                if out.source.drafted:
                    from_draft += 1
            if self.stops.stopped:
                run.stop(StopReason.STOP_STRING)
                break
            if len(run.generated) >= self.max_tokens:
                run.stop(StopReason.MAX_TOKENS)
                break
        return events, from_draft

    def flush(self, run: ReplyRun) -> list[TokenEvent]:
        """At the end of the reply: the events a possible stop string still held (none
        when one matched: it is cut). The bytes of a last incomplete character are
        dropped, from the stream and the reply's text alike (the module's docstring)."""
        held = [] if run.reason is StopReason.STOP_STRING else self.stops.flush()
        run.released.extend(ev.text for ev in held)
        self.utf8.flush()
        return held
