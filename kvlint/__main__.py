"""`python -m kvlint` runs the command line."""

from kvlint import run

run()
