"""Detectors that turn aggregates into alerts (pure decisions; the sink does the I/O)."""
