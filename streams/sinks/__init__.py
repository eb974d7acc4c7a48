"""Where processed batches go."""
