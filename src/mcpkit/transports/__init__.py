"""Thin adapters between byte streams and the protocol core: stdio, Streamable HTTP."""
