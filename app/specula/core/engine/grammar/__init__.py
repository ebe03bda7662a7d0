"""The engine's grammar floor (see docs/architecture.md)."""
