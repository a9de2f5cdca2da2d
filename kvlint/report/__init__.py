"""Reports: one module per output format, for `check` and `audit` alike, behind one format table; the audit
inventory and baselines."""
