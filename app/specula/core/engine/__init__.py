"""Speculative decoding over llama.cpp's low-level API.

Public surface (see docs/engine.md): :class:`~specula.core.engine.engine.Engine`
(load a target and an optional draft, then ``chat``/``complete`` yield events),
:class:`~specula.core.engine.sampling.rules.SamplingParams` with its
:class:`~specula.core.engine.sampling.rules.Rule`,
:class:`~specula.core.engine.config.SpecConfig` and ``DEFAULT_MODE``, the events
in :mod:`~specula.core.engine.events` and
:class:`~specula.core.engine.stats.GenerationStats`. Inside: one KV mirror
(:mod:`~specula.core.engine.native.kv`) and one drafter seam
(:mod:`~specula.core.engine.drafters`).
"""
