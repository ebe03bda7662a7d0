"""OpenAI-compatible HTTP server over specula.core (no Qt)."""
