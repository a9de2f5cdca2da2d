"""The binder: what each file declares, the tree index over them, import resolution and annotation spellings."""
