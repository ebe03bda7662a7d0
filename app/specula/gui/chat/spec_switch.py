"""The speculative switch, which shows the truth about the next reply.

On whenever a compatible draft is loaded (loading one turns it on, whether
from the picker, My Models or ``--draft`` on the command line), or when the
mode is prompt lookup, which needs no draft model. With no draft it reads
"Speculative: off (no draft)" and is disabled; while a draft is loading (a relaunch
restores the pair) it says so instead of "off". Turning it off lasts until the
next draft load; it is not saved, so an old session cannot silently disable a
draft given today. When the adaptive mode has paused drafting because it measured
it slower than plain here, the label says so ("Speculative: on · paused: slower
here (re-checked in N replies)", a count down to the reply that re-checks) and
:class:`RecheckButton` clears the verdict.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QPushButton, QWidget

from specula.core.engine.verdict import PolicyVerdict
from specula.gui.elided import ElidedCheckBox


class SpecSwitch(ElidedCheckBox):
    switched = Signal(bool)
    """The user turned speculation on or off (takes effect on the next reply)."""
    pause_shown = Signal(object)
    """The label started or stopped saying that adaptive paused drafting: the verdict it
    shows (a PolicyVerdict), or None. The live statistics say the same."""

    def __init__(self, parent: QWidget | None = None) -> None:
        # The pause's words elide past "Speculative: on" (the whole sentence is the
        # tooltip): a long verdict never makes the window wider than the screen.
        super().__init__("Speculative: on", "Speculative: on · paused", parent)
        self.setObjectName("DraftSwitch")
        self._has_draft = False
        self._lookup = False
        self._builtin = False  # the speculation on offer is the target's own MTP head
        self._head = ""  # the draft head on offer ("EAGLE-3 head"), if one is loaded
        self._off_by_user = False
        self._draft_loading = False
        self._verdict: PolicyVerdict | None = None
        self._shown: PolicyVerdict | None = None  # the pause the label states, if any
        self.toggled.connect(self._on_toggled)
        self._sync()

    @property
    def speculating(self) -> bool:
        return self.isEnabled() and self.isChecked()

    def set_verdict(self, verdict: PolicyVerdict | None) -> None:
        """The adaptive policy's judgement after the last reply (None: nothing to say)."""
        self._verdict = verdict
        self._label()

    def set_draft_loaded(self, loaded: bool) -> None:
        self._verdict = None  # a verdict belongs to the pair that was loaded
        if loaded:
            self._off_by_user = False  # loading a draft means: speculate with it
        self._has_draft = loaded
        self._sync()

    def set_draft_loading(self, loading: bool) -> None:
        """A draft is on its way: the label says so rather than "off (no draft)"."""
        self._draft_loading = loading
        self._label()

    def set_builtin(self, builtin: bool) -> None:
        """Say the draft is the target's built-in MTP head (set before set_draft_loaded)."""
        self._builtin = builtin

    def set_head(self, label: str) -> None:
        """Say the draft is this head ("EAGLE-3 head"; "": none), set before set_draft_loaded."""
        self._head = label

    def set_lookup_mode(self, lookup: bool) -> None:
        self._lookup = lookup
        self._sync()

    def _sync(self) -> None:
        can = self._has_draft or self._lookup
        self.blockSignals(True)
        self.setEnabled(can)
        self.setChecked(can and not self._off_by_user)
        self.blockSignals(False)
        self._label()

    def _label(self) -> None:
        self._write_label()
        v = self._verdict
        shown = v if (v is not None and v.paused and self.isEnabled() and self.isChecked()
                      and self._has_draft) else None
        if shown != self._shown:
            self._shown = shown
            self.pause_shown.emit(shown)

    def _write_label(self) -> None:
        if not self.isEnabled() and self._draft_loading:
            self.setText("Speculative: draft loading…")
            self.setToolTip("Speculation starts once the draft is loaded")
            return
        if not self.isEnabled():
            self.setText("Speculative: off (no draft)")
            self.setToolTip("Load a draft model to speculate")
            return
        how = " (prompt lookup)" if self._lookup and not self._has_draft else \
            " (built-in MTP)" if self._builtin and not self._lookup else \
            f" ({self._head})" if self._head and not self._lookup else ""
        v = self._verdict
        paused = v is not None and v.paused and self.isChecked() and self._has_draft
        if paused and v is not None:
            how += f" · {v.header_text()}"
        text = ("Speculative: on" if self.isChecked() else "Speculative: off") + how
        self.setText(text)
        tip = "Draft on/off: takes effect on the next reply, nothing is reloaded"
        self.setToolTip(f"{text}\n{v.tooltip()}\n{tip}" if paused and v is not None else
                        f"{text}\n{tip}" if how else tip)
        self.updateGeometry()

    def _on_toggled(self, on: bool) -> None:
        self._off_by_user = not on
        self._label()
        self.switched.emit(on)


class RecheckButton(QPushButton):
    """Shown while adaptive has paused drafting: forget the measured verdict and let the
    next reply draft and measure again (``Engine.clear_adaptive_verdict``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Re-check", parent)
        self.setToolTip("Forget the measurement that paused drafting: the next reply drafts and measures again")
        self.hide()

    def set_verdict(self, verdict: PolicyVerdict | None) -> None:
        self.setVisible(verdict is not None and verdict.paused)
