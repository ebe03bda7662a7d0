"""The engine's policy floor (see docs/architecture.md)."""
