"""`python -m kvlint` runs the command line."""

import sys

try:
    from kvlint.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line's modules load: no traceback, as during a run
    sys.stderr.write("kvlint: interrupted\n")
    sys.exit(130)

sys.exit(main())
