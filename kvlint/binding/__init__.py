"""The binder: what each file declares (with its connector-path markers), the tree index over them, import
resolution and annotation spellings."""
