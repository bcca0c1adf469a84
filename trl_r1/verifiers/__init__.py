"""Pure verifiers: text in, verdict out. No TRL import, usable anywhere (rewards, data builders, eval)."""
