"""Specula's PySide6 desktop app. Widgets hold no engine logic; see specula.core."""
