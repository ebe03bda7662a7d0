"""The engine's loop floor (see docs/architecture.md)."""
