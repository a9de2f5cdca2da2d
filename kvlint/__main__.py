"""`python -m kvlint` runs the command line."""

import sys

from kvlint.cli import main

sys.exit(main())
