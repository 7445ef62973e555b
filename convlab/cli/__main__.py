"""``python -m convlab.cli``: the ``convlab`` command, as the installed script runs it."""

import sys

from .main import main

sys.exit(main())
