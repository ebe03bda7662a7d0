"""The lab's replay and measurement tools: the commands behind the figures of docs/lab's notes.

Each runs as ``python -m specula_tools.lab.<name>`` from the repository root with
``PYTHONPATH=app:.``; the replays read the synthetic pair simulator from
``tests/core/engine/adaptive_sim.py`` (hence ``.`` on the path), the measurements load real
models. Their outputs are kept beside the note they serve, under ``docs/lab/data/<note>/``.
"""
