"""anyio glue: the role-agnostic JSON-RPC endpoint used by every stream transport."""
