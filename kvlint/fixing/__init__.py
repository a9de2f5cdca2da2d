"""Fixes: the fix model (edits, applicability), what a fix builder may ask about the code, fixing passes with
their verification, and writing fixed files (ruff's `fix/`)."""
