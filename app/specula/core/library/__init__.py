"""The local model library: the models folder and folders indexed in place (``scan``),
with their headers cached (``index``)."""
