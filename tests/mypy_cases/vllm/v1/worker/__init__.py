"""Hand-written stand-in for vLLM: only the types and helpers kvlint's mypy plugin keys on."""
