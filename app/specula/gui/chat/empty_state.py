"""What the chat column shows before there is a conversation: what to do first.

A new user should not meet an empty centre and a grey line. Without a model
the column says how to get one (Discover, My Models, or a GGUF file) with
buttons, and offers the folders of models already on this computer (LM
Studio's, the Hugging Face cache) and "Add folder…"; with a model loaded it
says the chat is ready and how to send (and, while no draft is loaded, how to
speculate).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget


class EmptyState(QWidget):
    discover_requested = Signal()
    """The user wants to find a model on Hugging Face."""
    library_requested = Signal()
    """The user wants to pick a downloaded model."""
    open_requested = Signal()
    """The user wants to open a GGUF file."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EmptyState")
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        self.title = QLabel("Welcome to Specula", self)
        self.title.setObjectName("EmptyTitle")
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        outer.addWidget(self.title)
        self.text = QLabel(self)
        self.text.setWordWrap(True)
        self.text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text.setObjectName("Muted")
        outer.addWidget(self.text)
        row = QVBoxLayout()  # stacked, so a narrow column never forces the window wider
        row.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.discover = QPushButton("Discover models", self)
        self.discover.setObjectName("Primary")
        self.discover.clicked.connect(self.discover_requested)
        row.addWidget(self.discover, 0, Qt.AlignmentFlag.AlignHCenter)
        self.library = QPushButton("My Models", self)
        self.library.clicked.connect(self.library_requested)
        row.addWidget(self.library, 0, Qt.AlignmentFlag.AlignHCenter)
        self.open = QPushButton("Open a GGUF file…", self)
        self.open.clicked.connect(self.open_requested)
        row.addWidget(self.open, 0, Qt.AlignmentFlag.AlignHCenter)
        outer.addLayout(row)
        self.offers: QWidget | None = None  # the folders of models already on disk
        self._offers_at = outer.count()
        outer.addStretch(2)
        self.set_model_loaded(False)

    def set_offers(self, offers: QWidget) -> None:
        """Show ``offers`` (:class:`specula.gui.models.folder_offers.FolderOffers`) under the
        buttons while no model is loaded."""
        self.offers = offers
        self.layout().insertWidget(self._offers_at, offers)  # type: ignore[union-attr]
        offers.setVisible(self.discover.isVisibleTo(self))

    def set_model_loaded(self, loaded: bool, loading: bool = False,
                         speculating: bool = False) -> None:
        """``speculating``: a draft (or the target's MTP head) is loaded too."""
        if loaded:
            self.title.setText("Ready")
            self.text.setText(ready_text(speculating))
        elif loading:
            self.title.setText("Loading the model…")
            self.text.setText("The progress is shown at the top; Cancel stops it.")
        else:
            self.title.setText("Welcome to Specula")
            self.text.setText("Start with a model: find one on Hugging Face in Discover (a target "
                              "and a small draft of the same family), pick one you already have "
                              "in My Models, or open a GGUF file.")
        for b in (self.discover, self.library, self.open):
            b.setVisible(not loaded and not loading)
            b.setMinimumWidth(200)
        if self.offers is not None:
            self.offers.setVisible(not loaded and not loading)


def ready_text(speculating: bool) -> str:
    """What "Ready" says: how to send, and how to speculate only while nothing drafts."""
    how = "Type a message below and press Enter (Shift+Enter for a new line). "
    if speculating:
        return how + ("The draft proposes tokens and the target checks them: the reply is the "
                      "target's own. F1 lists the shortcuts.")
    return how + ("Load a smaller model of the same family as the draft to speculate; "
                  "F1 lists the shortcuts.")
