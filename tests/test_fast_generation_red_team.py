"""Red team (round 2) against fast generation's refresh and compiled decoder (`trl_r1.data.fast_generation`).

Each case builds a real PEFT policy on the tiny Qwen2-shaped model (its weights scaled up so greedy decoding has
no near-ties for float32 rounding to flip, its LoRA tensors random so the adapter moves the output), changes it the
way a training run or a user could, and asserts that the merged copy generates what the policy generates (greedy
tokens equal, logits close) or refuses clearly. A case that shows a defect is `xfail(strict=True)` with what
happens against what is expected.
"""

import gc
import logging
import weakref

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from trl_r1.data.fast_generation import FallbackToEager, MergedPolicy

PROMPTS = ["What is 3 + 4?", "Compute 12 - 5 = and then", "def add(a, b):", "The quick brown fox"]


def _base(path: str, dtype: torch.dtype = torch.float32, scale: float = 20.0):
    """The tiny model with its matrices scaled up: confident logits, so greedy tokens are a sharp check."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 2:
                parameter.mul_(scale)
    return model


def _policy(path: str, seed: int = 0, **lora):
    torch.manual_seed(seed)
    lora = {"r": 4, "lora_alpha": 8, "target_modules": "all-linear", "init_lora_weights": False, **lora}
    return get_peft_model(_base(path), LoraConfig(**lora))


def _batch(path: str, prompts=PROMPTS, side: str = "left"):
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = side
    return tokenizer, tokenizer(list(prompts), return_tensors="pt", padding=True)


def _greedy(tokenizer, max_new_tokens: int = 8, **kwargs) -> GenerationConfig:
    return GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=tokenizer.eos_token_id,
                            pad_token_id=tokenizer.pad_token_id, **kwargs)


def _assert_serves(fast: MergedPolicy, policy, batch, config: GenerationConfig, rtol: float = 1e-5):
    """The copy's logits equal the policy's (to `rtol` of their largest magnitude: float32 rounding of a merged
    weight against PEFT's separate LoRA branch) and its greedy tokens are the policy's own."""
    with torch.no_grad():
        want = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        got = fast.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    gap = (got.float() - want.float()).abs().max().item()
    assert gap <= rtol * want.abs().max().item(), f"logits differ by {gap} (largest {want.abs().max().item()})"
    expected = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                               generation_config=config)
    produced = fast.generate(batch.input_ids, batch.attention_mask, config)
    assert produced.tolist() == expected.tolist()


def _lora_parameters(policy, which: str):
    return [p for name, p in policy.named_parameters() if f"{which}.default" in name]


# ------------------------------------------------------------------------------------------ refresh correctness

def test_refresh_follows_an_in_place_change_of_one_layers_lora_b(tiny_model_dir):
    """No optimizer, no version bump of interest: one layer's lora_B written in place under no_grad."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    layer = policy.base_model.model.model.layers[1].mlp.down_proj
    with torch.no_grad():
        layer.lora_B["default"].weight.add_(torch.randn_like(layer.lora_B["default"].weight))
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))
