"""Event models, topic names and ClickHouse DDL: the contract between every part."""
