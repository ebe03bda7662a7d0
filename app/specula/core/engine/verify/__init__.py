"""The engine's verify floor (see docs/architecture.md)."""
