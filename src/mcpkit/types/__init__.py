"""Pure data: JSON-RPC envelopes, MCP constants, the method table and the one codec.

Nothing in this package performs I/O or imports anything above it.
"""
