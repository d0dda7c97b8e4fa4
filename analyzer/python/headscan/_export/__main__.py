"""`python -m _export MODEL_DIR OUT.pt2` with this folder's parent on sys.path: `headscan export`
without headscan's C++ core (a build tree's Python has none)."""

import sys

from .command import main

sys.exit(main())
