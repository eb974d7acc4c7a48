"""Stream processors that derive tables from stored events (I/O at this edge, math in stats/)."""
