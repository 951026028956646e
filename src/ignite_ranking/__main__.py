"""``python -m ignite_ranking``: the command line."""

import sys

from .cli import main

sys.exit(main())
