"""The engine's native floor (see docs/architecture.md)."""
