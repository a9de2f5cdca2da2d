"""kvlint: static invariant checker for vLLM KV-connector outputs."""

__version__ = "0.1.0"
