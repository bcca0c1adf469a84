"""Offline test kit: a tiny local model + tokenizer, for demos, tests and recipes/tiny."""

from .tiny import build_tiny_model, build_tokenizer, chat_template

__all__ = ["build_tiny_model", "build_tokenizer", "chat_template"]
