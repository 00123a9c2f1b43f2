"""Command line: ``mcpkit serve``, ``mcpkit list``, ``mcpkit call``."""
