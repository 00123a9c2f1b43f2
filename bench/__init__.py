"""mcpkit benchmark suite: ``python -m bench`` (see README.md)."""
