"""The engine's sampling floor (see docs/architecture.md)."""
