"""``python -m paretotune``: the command line (:mod:`paretotune.cli`)."""
import sys

from paretotune.cli import main

sys.exit(main())
