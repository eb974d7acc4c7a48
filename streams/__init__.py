"""Stream processing: the faust app, its agents, the ClickHouse sink and storage."""
