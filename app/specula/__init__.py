"""Specula: a local desktop chat app with exact speculative decoding."""

__version__ = "0.1.0"
