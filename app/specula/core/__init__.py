"""Specula's Qt-free core: models, engine, hub, library, settings.

Nothing under ``specula.core`` imports Qt (an import-linter contract checks it),
so the engine, the CLI and the server run without a display.
"""
