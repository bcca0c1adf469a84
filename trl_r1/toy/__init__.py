"""The toy kit behind the main job, the demos and the tests: a tiny model + tokenizer built locally (tiny), the
verifiable arithmetic task (arithmetic), a briefly trained toy reasoner and a local OpenAI-compatible server."""

from .tiny import build_tiny_model, build_tokenizer, chat_template

__all__ = ["build_tiny_model", "build_tokenizer", "chat_template"]
