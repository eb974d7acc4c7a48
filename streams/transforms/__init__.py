"""Pure functions that turn a batch of decoded events into keys and SQL."""
