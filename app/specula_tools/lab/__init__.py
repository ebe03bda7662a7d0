"""The lab's replay and measurement tools: the commands behind the figures of docs/lab's notes.

Each runs as ``PYTHONPATH=app python -m specula_tools.lab.<name>`` from the repository root
(``-m`` puts the root on the path too): the replays read the synthetic pair simulator of
``tests/core/engine/adaptive_sim.py``, so they run from a checkout; the measurements load real
models. Their outputs are kept beside the note they serve, under ``docs/lab/data/<note>/``.
"""
