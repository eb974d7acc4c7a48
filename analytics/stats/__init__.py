"""Math on aggregates: pure functions with explicit seeds, no I/O, no faust, no ClickHouse."""
