"""The frozen app's entry point: the same `specula` command as the console script."""

import multiprocessing
import sys

from specula.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
