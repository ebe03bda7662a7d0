"""Speculative decoding over llama.cpp's low-level API.

Public surface: :class:`~specula.core.engine.engine.Engine` (load a target and
an optional draft, then ``chat``/``complete`` yield events),
:class:`~specula.core.engine.sampling.SamplingParams`,
:class:`~specula.core.engine.config.SpecConfig`, the events in
:mod:`~specula.core.engine.events` and
:class:`~specula.core.engine.stats.GenerationStats`.
"""
