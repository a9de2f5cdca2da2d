"""Helpers the tests (and bench/) share: real vLLM sources, an LSP session, a second user."""
