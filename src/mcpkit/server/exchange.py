"""Re-export: the request-to-client channel lives in :mod:`mcpkit.runtime.exchange`
(transports implement it and must not import the server package)."""

from ..runtime.exchange import NULL_EXCHANGE, CollectingExchange, Exchange

__all__ = ["NULL_EXCHANGE", "CollectingExchange", "Exchange"]
