"""The one model of a completion, used by the generation layer, the rewards and the dataset builders.

A completion is what a model wrote after a prompt: its visible `content`, optionally a separate `reasoning`
field (OpenAI-compatible servers with a reasoning parser, tokenizers with a response schema), and whether the
chat template already wrote the opening ``<think>`` (`think_prefilled`). The generation layer fills the
sampling facts (`finish_reason`, `num_tokens`); a reward call fills the `prompt`, the sample's dataset
`columns` and its `completion_ids`. Splitting it into reasoning and answer is `trl_r1.verifiers.format`'s one
parser (`parse_trace`), reached through `Completion.trace()`. Pure Python: nothing here imports TRL.

>>> c = Completion.from_trl([{"role": "assistant", "reasoning_content": "2+3=5", "content": "<answer>5</answer>"}])
>>> c.text
'<think>2+3=5</think>\\n<answer>5</answer>'
>>> Completion("2+3=5</think> 5", think_prefilled=True).trace()
Trace(reasoning='2+3=5', answer='5')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .verifiers.format import THINK_CLOSE, THINK_OPEN, Trace, parse_trace, with_think_prefix

REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


@dataclass
class Completion:
    """One completion, from a generator or from TRL's reward call."""

    content: str  # the generated text (after a prefilled <think>, if the template wrote one)
    reasoning: str | None = None  # a separate reasoning field, if the backend or message had one
    finish_reason: str | None = None  # "stop" or "length" (truncated)
    num_tokens: int | None = None  # generated tokens
    think_prefilled: bool | None = None  # the prompt ended with <think>; None when unknown
    prompt: Any = None  # the raw prompt (a string or a list of messages), when known
    columns: dict[str, Any] = field(default_factory=dict)  # this sample's dataset columns (reward calls)
    completion_ids: list[int] | None = None

    @property
    def text(self) -> str:
        """The whole completion as R1 text: a separate reasoning field (or a prefilled ``<think>``) re-wrapped."""
        if self.reasoning is not None:
            return f"{THINK_OPEN}{self.reasoning}{THINK_CLOSE}\n{self.content}"
        return with_think_prefix(self.content, bool(self.think_prefilled))

    @property
    def prompt_text(self) -> str:
        """The prompt as text: a plain prompt itself, or the last user turn of a conversation."""
        return prompt_to_text(self.prompt)

    def trace(self) -> Trace:
        """Reasoning and answer (`parse_trace`'s rules); ValueError, with the reason, when it has no such split."""
        return parse_trace(self.content, self.reasoning, self.think_prefilled)

    @classmethod
    def from_trl(cls, completion: Any, **fields: Any) -> Completion:
        """A completion as TRL passes it to a reward: a string, a list of messages or one message dict.

        Raises TypeError for anything that is not text or messages.
        """
        if isinstance(completion, str):
            return cls(completion, **fields)
        if isinstance(completion, dict):
            completion = [completion]
        if isinstance(completion, list) and all(isinstance(m, dict) for m in completion):
            assistant = [m for m in completion if m.get("role", "assistant") == "assistant"]
            message = assistant[-1] if assistant else (completion[-1] if completion else {})
            reasoning = next((message[k] for k in REASONING_KEYS if isinstance(message.get(k), str) and message[k]),
                             None)
            return cls(message_text(message), reasoning=reasoning, **fields)
        raise TypeError(f"completion must be a string or a list of messages, got {type(completion).__name__}")


def message_text(message: Any) -> str:
    """The text of a message's `content`, which may be a string or a list of typed parts."""
    content = message.get("content") if isinstance(message, dict) else message
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return str(content)


def prompt_to_text(prompt: Any) -> str:
    """The text of a prompt: a plain string, or the last user message of a conversation."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return message_text(users[-1]) if users else "".join(message_text(m) for m in prompt)
    return str(prompt)
