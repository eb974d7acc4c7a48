"""What a stored batch touched, and the SQL that recomputes the derived rows for those keys (pure)."""
