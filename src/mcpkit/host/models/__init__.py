"""Model adapters: one small interface, several providers (see :mod:`.base`)."""

from .base import Model, ModelError, ModelReply, StreamingModel, ToolCall, model_from_config

__all__ = ["Model", "ModelError", "ModelReply", "StreamingModel", "ToolCall", "model_from_config"]
