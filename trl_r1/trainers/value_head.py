"""The critic pieces of `R1PPOTrainer`: a scalar value head and the hooks that let it share a base (its clipped
loss is a pure function: `trl_r1.algorithms.value`).

The critic reads a causal LM's last hidden state, so it shares the (possibly 4-bit) base with the policy instead of
being a second model. The head is a submodule of the policy model and its values are computed inside the policy's
forward (`CriticInForward`), so DDP and DeepSpeed see one forward and synchronise the head's and the critic
adapter's gradients like the policy's. Switching PEFT adapters (the critic's own LoRA, or none for the reference)
re-freezes every inactive adapter, so the trainable flags are put back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor, nn


class ValueHead(nn.Module):
    """A linear map from a hidden state to a scalar value, computed in float32 whatever the trunk's dtype.

    It starts at V = 0 everywhere (zero init), a neutral baseline that adds no noise to the first advantages.

    Example:
        >>> head = ValueHead(hidden_size=4)
        >>> head(torch.randn(2, 5, 4), num_completion_tokens=3)  # states before each of the last 3 tokens
        tensor([[0., 0., 0.],
                [0., 0., 0.]], grad_fn=<SqueezeBackward1>)
    """

    def __init__(self, hidden_size: int):
        super().__init__()
        self.linear = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, hidden_states: Tensor, num_completion_tokens: int) -> Tensor:
        """Values ``(B, T)`` of the states in which each of the last ``T`` tokens was sampled.

        Token ``t`` of the completion is sampled after position ``P - 1 + t`` of prompt + completion, so its state
        is the hidden state one position earlier: ``hidden_states[:, -T - 1:-1]``.
        """
        states = hidden_states[:, -num_completion_tokens - 1 : -1]
        with torch.autocast(states.device.type, enabled=False):  # float32 unless an engine cast the head (DeepSpeed)
            return self.linear(states.to(self.linear.weight.dtype)).squeeze(-1).float()


class CriticInForward:
    """While `values` is active, every forward of ``policy`` also computes the critic's values, so a DDP / DeepSpeed
    wrapper sees them as part of its one forward. They are tied into the forward's output with weight 0 (DDP with
    ``find_unused_parameters`` follows the output to find the parameters used; it rebuilds the output type, so an
    extra key cannot carry them) and collected for the loss.

    ``critic_hidden(input_ids, attention_mask)`` gives the critic's own trunk states (a second LoRA adapter); None
    means a shared trunk: the head reads the hidden states of the policy forward itself (taken with a hook on
    ``backbone``; TRL's fused LM head returns only log-probs).
    """

    def __init__(self, policy: nn.Module, backbone: nn.Module, value_head: ValueHead, critic_hidden=None):
        self.policy, self.backbone, self.value_head, self.critic_hidden = policy, backbone, value_head, critic_hidden

    @contextmanager
    def values(self, num_completion_tokens: int, train_trunk: bool = True) -> Iterator[list[Tensor]]:
        """Collect the values ``(B, T)`` of each policy forward in the block; ``train_trunk=False`` stops the value
        gradient at the trunk (only the head learns)."""
        captured: list[Tensor] = []
        hidden: list[Tensor] = []

        def keep_hidden(module, args, output):
            hidden.append(output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0])

        def add_values(module, args, kwargs, output):
            if self.critic_hidden is None:
                states = hidden.pop()
            else:
                states = self.critic_hidden(kwargs["input_ids"], kwargs["attention_mask"])
            values = self.value_head(states if train_trunk else states.detach(), num_completion_tokens)
            captured.append(values)
            anchor = next((k for k, v in output.items() if torch.is_tensor(v) and v.requires_grad), None)
            if anchor is not None:
                output[anchor] = output[anchor] + 0.0 * values.sum()

        handles = [self.policy.register_forward_hook(add_values, with_kwargs=True)]
        if self.critic_hidden is None:
            handles.append(self.backbone.register_forward_hook(keep_hidden))
        try:
            yield captured
        finally:
            for handle in handles:
                handle.remove()


@contextmanager
def keep_trainable(parameters: list[nn.Parameter]) -> Iterator[None]:
    """Restore ``requires_grad=True`` on ``parameters`` after the block.

    PEFT's ``set_adapter`` and ``disable_adapter`` mark every adapter but the active one as frozen; the policy and
    critic adapters must both stay trainable for the optimizer and later forwards.
    """
    try:
        yield
    finally:
        for parameter in parameters:
            parameter.requires_grad_(True)
