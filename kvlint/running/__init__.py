"""Running kvlint over a tree: file discovery, the worker processes, the result cache and its private directory."""
