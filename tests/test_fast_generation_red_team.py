"""Red team (round 2) against fast generation's refresh and compiled decoder (`trl_r1.data.fast_generation`).

Each case builds a real PEFT policy on the tiny Qwen2-shaped model (its weights scaled up so greedy decoding has
no near-ties for float32 rounding to flip, its LoRA tensors random so the adapter moves the output), changes it the
way a training run or a user could, and asserts one outcome per case (`_serves_through`): the merged copy
generates what the policy generates (greedy tokens equal, logits close), or, for a case the copy does not
implement, it refuses at build or at the call naming the cause. A refusal where serving is expected fails, and so
does serving where a refusal is expected (the refusal list then needs updating with the case's test).
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


def test_refresh_sees_a_change_below_bf16_resolution(tiny_model_dir):
    """An fp32 adapter moved by one part in 10^5 (below bf16's 2^-8): the fp32 copy must take it, bit for bit
    what a copy built fresh from the moved adapter holds."""
    policy = _policy(tiny_model_dir)
    fast = MergedPolicy(policy)
    layer = policy.base_model.model.model.layers[0].self_attn.q_proj
    with torch.no_grad():
        layer.lora_A["default"].weight.mul_(1 + 1e-5)
    fast.refresh()
    fresh = MergedPolicy(policy)
    got = fast.model.model.layers[0].self_attn.q_proj.weight
    want = fresh.model.model.layers[0].self_attn.q_proj.weight
    assert not torch.equal(want, MergedPolicy(_policy(tiny_model_dir)).model.model.layers[0].self_attn.q_proj.weight)
    assert torch.equal(got, want)


def test_refresh_follows_a_change_and_its_reverse(tiny_model_dir):
    """A step, a refresh, then the adapter put back to its earlier value: the copy must go back too."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    saved = [p.detach().clone() for p in _lora_parameters(policy, "lora_A")]
    with torch.no_grad():
        for parameter in _lora_parameters(policy, "lora_A"):
            parameter.add_(0.5 * torch.randn_like(parameter))
    fast.refresh()
    with torch.no_grad():
        for parameter, old in zip(_lora_parameters(policy, "lora_A"), saved):
            parameter.copy_(old)
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))


def test_refresh_after_the_adapter_is_reset_to_zero_serves_the_base(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    with torch.no_grad():
        for parameter in _lora_parameters(policy, "lora_B"):
            parameter.zero_()
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))
    with torch.no_grad(), policy.disable_adapter():
        base = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    assert torch.allclose(fast.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits, base,
                          rtol=0, atol=1e-5 * base.abs().max().item())


@pytest.mark.parametrize("fused", [False, True])
def test_refresh_after_adamw_on_some_layers_only(tiny_model_dir, fused):
    """A real optimizer (foreach or fused kernel: no version bump) on the lora_A of the attention layers only."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    trained = [p for name, p in policy.named_parameters() if "self_attn" in name and "lora_A" in name]
    optimizer = torch.optim.AdamW(trained, lr=0.05, fused=fused, foreach=None if fused else True)
    for _ in range(2):
        loss = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                      labels=batch.input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))


def test_refresh_follows_set_adapter_to_a_second_adapter(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    torch.manual_seed(1)
    policy.add_adapter("other", LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False))
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    policy.set_adapter("other")
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))


@pytest.mark.parametrize("merged", [False, True])
def test_refresh_follows_a_disabled_adapter(tiny_model_dir, merged):
    """`with policy.disable_adapter():` (what TRL does for a reference model without a copy): the copy built
    or refreshed inside it must serve what the policy serves there, the base; a merged policy is unmerged by
    its next forward there (PEFT), so the copy serves the base too."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    if merged:
        policy.merge_adapter()
    fast = MergedPolicy(policy)
    with policy.disable_adapter():
        fast.refresh()
        _assert_serves(fast, policy, batch, _greedy(tokenizer))
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))


def _serves_through(path: str, policy, *steps, refused: str | None = None, **options) -> MergedPolicy | None:
    """The case's whole check: with `refused` (a cause), the copy must be refused at build, naming it; else it
    must be built (a refusal fails), serve the policy, and serve it again after each of `steps` (a change a run or a
    user makes to the policy) and a refresh. `options` go to `MergedPolicy`; the copy is returned."""
    tokenizer, batch = _batch(path)
    if refused:
        with pytest.raises(ValueError, match=refused):
            MergedPolicy(policy, **options)
        return
    fast = MergedPolicy(policy, **options)
    _assert_serves(fast, policy, batch, _greedy(tokenizer))
    for step in steps:
        with torch.no_grad():
            step(policy)
        fast.refresh()
        _assert_serves(fast, policy, batch, _greedy(tokenizer))
    return fast


def _train_base_tensors(policy) -> None:
    """A step on every trained tensor that is not a LoRA matrix (biases, modules_to_save, trainable tokens)."""
    for name, parameter in policy.named_parameters():
        if parameter.requires_grad and "lora_" not in name:
            parameter.add_(torch.randn_like(parameter))


def _move_lora_b(policy) -> None:
    for parameter in _lora_parameters(policy, "lora_B"):
        parameter.add_(torch.randn_like(parameter))


def test_lora_bias_is_refused_by_name(tiny_model_dir):
    """`LoraConfig(lora_bias=True)`: lora_B carries a bias, part of the delta PEFT adds; the copy merges no bias."""
    policy = _policy(tiny_model_dir, lora_bias=True)
    with torch.no_grad():
        for name, parameter in policy.named_parameters():
            if "lora_B" in name and name.endswith("bias"):
                parameter.normal_()
    _serves_through(tiny_model_dir, policy, refused="trains biases")


@pytest.mark.parametrize("bias", ["all", "lora_only"])
def test_trained_base_biases_are_refused_by_name(tiny_model_dir, bias):
    """`LoraConfig(bias=...)` trains the base layers' own biases (Qwen2's q/k/v have one)."""
    _serves_through(tiny_model_dir, _policy(tiny_model_dir, bias=bias), _train_base_tensors, refused="trains biases")


def test_modules_to_save_is_refused_by_name(tiny_model_dir):
    """A trained `modules_to_save` (the final norm here): its trained copy is what the policy computes with."""
    policy = _policy(tiny_model_dir, target_modules=["q_proj", "v_proj"], modules_to_save=["norm"])
    _serves_through(tiny_model_dir, policy, _train_base_tensors, refused="modules_to_save")


def test_dora_is_refused_by_name(tiny_model_dir):
    _serves_through(tiny_model_dir, _policy(tiny_model_dir, use_dora=True), refused="DoRA")


def test_rslora_and_per_module_alpha_and_rank(tiny_model_dir):
    policy = _policy(tiny_model_dir, use_rslora=True, rank_pattern={"down_proj": 8},
                     alpha_pattern={"q_proj": 32, "o_proj": 2})
    _serves_through(tiny_model_dir, policy, _move_lora_b)


def test_lora_on_a_tied_lm_head_is_refused_by_name(tiny_model_dir):
    """The tiny model ties lm_head to embed_tokens. LoRA on lm_head changes the output projection only; a copy
    that wrote base + delta into the shared tensor would change the input embedding too."""
    policy = _policy(tiny_model_dir, target_modules=["q_proj", "lm_head"])
    _serves_through(tiny_model_dir, policy, refused="tied to the input embedding")


def test_lora_on_the_embedding_is_refused_by_name(tiny_model_dir):
    policy = _policy(tiny_model_dir, target_modules=["q_proj", "embed_tokens"])
    _serves_through(tiny_model_dir, policy, refused="on an embedding")


def test_a_merged_policy_is_copied_once_not_twice(tiny_model_dir):
    """`policy.merge_adapter()` (PEFT writes the delta into the base weight and skips the LoRA branch): a copy
    of base + delta would count the delta twice. After `unmerge_adapter()` a refresh must follow back."""
    policy = _policy(tiny_model_dir)
    policy.merge_adapter()
    _serves_through(tiny_model_dir, policy, lambda policy: policy.unmerge_adapter(), _move_lora_b)


@pytest.mark.parametrize("keep_base", [None, False])
def test_a_policy_merged_after_the_copy_was_built(tiny_model_dir, keep_base):
    """Built from the unmerged policy, then `merge_adapter()` (as TRL's vLLM sync does) with a step on lora_B (the
    merged layer ignores it); then `unmerge_adapter()` (PEFT subtracts the new delta), each followed by a refresh."""
    def merge_and_step(policy):
        policy.merge_adapter()
        _move_lora_b(policy)

    _serves_through(tiny_model_dir, _policy(tiny_model_dir), merge_and_step,
                    lambda policy: policy.unmerge_adapter(), keep_base=keep_base)


def test_a_trained_base_parameter_outside_the_adapter_is_refreshed(tiny_model_dir):
    """A user unfreezes the final norm beside the LoRA (requires_grad, no modules_to_save): after a step the
    policy computes with the new norm."""
    policy = _policy(tiny_model_dir, target_modules=["q_proj", "v_proj"])
    policy.base_model.model.model.norm.weight.requires_grad_(True)
    _serves_through(tiny_model_dir, policy, lambda policy: policy.base_model.model.model.norm.weight.mul_(-1.5))


@pytest.fixture(scope="module")
def scaled_model_dir(tiny_model_dir, tmp_path_factory):
    """The scaled tiny model saved, so it can be loaded in 4-bit (bitsandbytes quantizes at load, on CPU too)."""
    out = tmp_path_factory.mktemp("scaled")
    _base(tiny_model_dir).save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(out)
    return str(out)


def _qlora(path: str, compute_dtype: torch.dtype = torch.float32, seed: int = 0):
    from transformers import BitsAndBytesConfig

    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                      bnb_4bit_compute_dtype=compute_dtype)
    base = AutoModelForCausalLM.from_pretrained(path, quantization_config=quantization, dtype=compute_dtype)
    torch.manual_seed(seed)
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))


def _logit_gap(fast: MergedPolicy, policy, batch) -> float:
    with torch.no_grad():
        want = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        got = fast.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    return (got.float() - want.float()).abs().max().item()


@pytest.mark.parametrize("keep_base", [
    True, False])
def test_4bit_refresh_after_the_policy_ran_a_forward(scaled_model_dir, keep_base):
    """bitsandbytes repacks a 4-bit weight for its CPU kernel at the first inference forward: a refresh after the
    policy has generated (and a step) must dequantize the same base, kept or not: bit for bit a fresh copy, and
    no further from the policy than at build (bitsandbytes' CPU kernel computes from a bf16 dequantization, so the
    fp32 copy is some 5 % of the largest logit away from the 4-bit policy here from the start)."""
    policy = _qlora(scaled_model_dir)
    tokenizer, batch = _batch(scaled_model_dir)
    fast = MergedPolicy(policy, keep_base=keep_base)
    at_build = _logit_gap(fast, policy, batch)
    policy.eval()
    with torch.no_grad():
        policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                        generation_config=_greedy(tokenizer, 2))
        for parameter in _lora_parameters(policy, "lora_B"):
            parameter.add_(0.3 * torch.randn_like(parameter))
    fast.refresh()
    assert _logit_gap(fast, policy, batch) <= 2 * at_build
    fresh = MergedPolicy(policy, keep_base=not keep_base)
    for (name, got), want in zip(fast.model.named_parameters(), fresh.model.parameters()):
        assert torch.equal(got, want), name


# ------------------------------------------------------------------------------------------------------ shapes

def test_prompts_over_the_budget_come_back_whole_and_are_counted(tiny_model_dir, caplog):
    """Prompts longer than the budget are cut from the left for decoding, but the output must start with the
    prompts as given (TRL slices the completion at the prompt's length) and a WARNING must count them."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, prompt_budget=4)
    config = _greedy(tokenizer, 6)
    with caplog.at_level(logging.WARNING):
        produced = fast.generate(batch.input_ids, batch.attention_mask, config)
    width = batch.input_ids.shape[1]
    assert produced[:, :width].tolist() == batch.input_ids.tolist()
    longer = int((batch.attention_mask.sum(1) > 4).sum())
    assert any(f"{longer} of {len(PROMPTS)} prompts" in record.getMessage() for record in caplog.records
               if record.levelno >= logging.WARNING), [r.getMessage() for r in caplog.records]
    cut = policy.generate(input_ids=batch.input_ids[:, -4:], attention_mask=batch.attention_mask[:, -4:],
                          generation_config=config)
    assert produced[:, width:].tolist() == cut[:, 4:].tolist()


def test_a_batch_larger_than_the_stage_is_served_in_parts(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    width = batch.input_ids.size(1)  # every prompt within the budget: only the batch is larger than the stage's
    fast = MergedPolicy(policy, compile="eager", prompt_budget=width)
    fast.start_stage(batch_size=2, max_new_tokens=8, prompt_budget=width)
    produced = fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    expected = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                               generation_config=_greedy(tokenizer))
    assert produced.tolist() == expected.tolist() and fast.graphs_built == 1


def test_more_new_tokens_than_the_stage_are_refused_by_name(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, prompt_budget=16)
    fast.start_stage(batch_size=4, max_new_tokens=4, prompt_budget=16)
    with pytest.raises(ValueError, match="max_new_tokens"):
        fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer, 12))


@pytest.mark.parametrize("max_new_tokens", [1, 2])
def test_batch_of_one_and_the_shortest_completions(tiny_model_dir, max_new_tokens):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir, PROMPTS[:1])
    fast = MergedPolicy(policy)
    _assert_serves(fast, policy, batch, _greedy(tokenizer, max_new_tokens))


def test_eos_at_the_first_step_ends_every_row_there(tiny_model_dir):
    """Every row's first greedy token is an EOS: `generate` stops after one token; the copy must not decode on
    past the end (after EOS only pad, and the same tokens)."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    first = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                            generation_config=_greedy(tokenizer, 1))[:, -1]
    config = _greedy(tokenizer, 8)
    config.eos_token_id = sorted(set(first.tolist()))
    fast = MergedPolicy(policy)
    produced = fast.generate(batch.input_ids, batch.attention_mask, config)
    width = batch.input_ids.shape[1]
    assert produced[:, width].tolist() == first.tolist()
    assert (produced[:, width + 1:] == tokenizer.pad_token_id).all()


def test_pad_equal_to_eos(tiny_model_dir):
    """Llama/Qwen base tokenizers pad with their EOS: the prompt's left pads are EOS ids under a zero mask."""
    policy = _policy(tiny_model_dir)
    tokenizer, _ = _batch(tiny_model_dir)
    tokenizer.pad_token = tokenizer.eos_token
    batch = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    config = _greedy(tokenizer, 8)
    assert config.pad_token_id == config.eos_token_id
    fast = MergedPolicy(policy)
    _assert_serves(fast, policy, batch, config)


def test_right_padded_prompts_are_refused_naming_the_fix(tiny_model_dir):
    """TRL left-pads; a right-padded batch decoded as if left-padded would continue after the pads."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir, side="right")
    with pytest.raises(ValueError, match="padding_side='left'"):
        MergedPolicy(policy).generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer, 6))


# ------------------------------------------------------------------------------------ generation settings

@pytest.mark.parametrize("setting, served", [
    ({"repetition_penalty": 1.5}, False), ({"min_new_tokens": 6}, True), ({"no_repeat_ngram_size": 2}, False),
    ({"bad_words_ids": [[466]]}, False), ({"suppress_tokens": [466, 210]}, False),
    ({"begin_suppress_tokens": [305, 304]}, False), ({"forced_eos_token_id": 2}, False)])
def test_a_greedy_setting_is_honoured_or_refused_by_name(tiny_model_dir, setting, served):
    """Settings TRL users pass through `generation_kwargs`: the copy decodes them as `generate` does (those it
    implements) or refuses them by name, never ignores them."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    config = _greedy(tokenizer, 8, **setting)
    fast = MergedPolicy(policy)
    if not served:
        with pytest.raises(ValueError, match=next(iter(setting))):
            fast.generate(batch.input_ids, batch.attention_mask, config)
        return
    expected = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                               generation_config=config)
    assert fast.generate(batch.input_ids, batch.attention_mask, config).tolist() == expected.tolist()


def test_num_return_sequences_is_honoured(tiny_model_dir):
    """Sampling with `num_return_sequences=2`: `generate` returns two rows per prompt, each row's prompt first."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    config = GenerationConfig(max_new_tokens=4, do_sample=True, num_return_sequences=2,
                              eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    produced = MergedPolicy(policy).generate(batch.input_ids, batch.attention_mask, config)
    width = batch.input_ids.size(1)
    assert produced[:, :width].tolist() == batch.input_ids.repeat_interleave(2, 0).tolist()
    assert produced.size(1) > width


@pytest.mark.parametrize("setting", [{"top_k": 1}, {"top_p": 1e-9}, {"min_p": 1.0}])
def test_sampling_cut_to_one_token_is_greedy(tiny_model_dir, setting):
    """Sampling whose warper leaves only the top token (TRL passes top_k, top_p, min_p through) must give the
    greedy tokens, whatever the temperature: the warpers are applied, and after the temperature."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    greedy = fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    config = GenerationConfig(max_new_tokens=8, do_sample=True, temperature=3.0, eos_token_id=tokenizer.eos_token_id,
                              pad_token_id=tokenizer.pad_token_id, **setting)
    torch.manual_seed(0)
    assert fast.generate(batch.input_ids, batch.attention_mask, config).tolist() == greedy.tolist()


# ------------------------------------------------------------------------------------ stages, compiled decoder

def _sampling(tokenizer, max_new_tokens: int = 8) -> GenerationConfig:
    return GenerationConfig(max_new_tokens=max_new_tokens, do_sample=True, temperature=1.0, top_p=0.9,
                            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)


def test_sampling_with_a_seed_is_reproducible_and_the_same_compiled_or_not(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    runs = []
    for compile_ in (None, "eager", "eager"):
        fast = MergedPolicy(policy, compile=compile_, prompt_budget=32)
        fast.start_stage(batch_size=4, max_new_tokens=8)
        torch.manual_seed(7)
        runs.append(fast.generate(batch.input_ids, batch.attention_mask, _sampling(tokenizer)).tolist())
    assert runs[0] == runs[1] == runs[2]
    torch.manual_seed(8)
    assert fast.generate(batch.input_ids, batch.attention_mask, _sampling(tokenizer)).tolist() != runs[0]


def test_two_compiled_copies_interleaved_and_a_users_own_compile_beside_them(tiny_model_dir):
    """Two stages' copies in one process, calls interleaved with mixed batches (a short last batch): one graph
    each, every output the policy's own; the decoder's fail-on-recompile stance does not leak into a user's own
    `torch.compile` function, which recompiles for new shapes as usual."""
    policies = [_policy(tiny_model_dir, seed=seed) for seed in (0, 3)]
    tokenizer, _ = _batch(tiny_model_dir)
    copies = [MergedPolicy(policy, compile="eager", prompt_budget=32) for policy in policies]
    for fast in copies:
        fast.start_stage(batch_size=3, max_new_tokens=8)
    calls = 0

    @torch.compile(backend="eager", dynamic=False)
    def users_own(x):
        nonlocal calls
        calls += 1
        return x.sin() * 2

    for prompts in (PROMPTS[:3], PROMPTS[1:4], PROMPTS[2:3]):
        _, batch = _batch(tiny_model_dir, prompts)
        for fast, policy in zip(copies, policies):
            want = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                   generation_config=_greedy(tokenizer))
            assert fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer)).tolist() == want.tolist()
        users_own(torch.randn(len(prompts) + calls))
    assert [fast.graphs_built for fast in copies] == [1, 1]
    assert calls == 3  # `calls` is guarded, so every call recompiles: none is refused, no stance left behind


def test_a_decoder_kept_after_its_stage_ended(tiny_model_dir):
    """A reference to the previous stage's decoder used after `start_stage` began the next: it still generates the
    policy's tokens, and does not disturb the new stage's graph count."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, compile="eager", prompt_budget=32)
    old = fast.start_stage(batch_size=4, max_new_tokens=8)
    want = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           generation_config=_greedy(tokenizer))
    assert fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer)).tolist() == want.tolist()
    fast.start_stage(batch_size=4, max_new_tokens=8)
    assert old.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer)).tolist() == want.tolist()
    assert fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer)).tolist() == want.tolist()
    assert fast.graphs_built == 1


def test_a_recompile_mid_stage_raises_naming_the_cause_and_the_fix(tiny_model_dir):
    """The copy switched to training mode mid-stage (a guard of the compiled step fails): never eager in
    silence; the error names what changed and the fix."""
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, compile="eager", prompt_budget=32)
    fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    fast.model.train()
    with pytest.raises(FallbackToEager) as raised:
        fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    assert "fast_generation: off" in str(raised.value)


def test_set_adapter_to_one_on_fewer_layers_restores_the_others(tiny_model_dir):
    """A second adapter on q_proj only: after `set_adapter`, every other layer must be back to its base."""
    policy = _policy(tiny_model_dir)
    torch.manual_seed(2)
    policy.add_adapter("other", LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], init_lora_weights=False))
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    policy.set_adapter("other")
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))
    policy.set_adapter("default")
    fast.refresh()
    _assert_serves(fast, policy, batch, _greedy(tokenizer))


def _tensors(value, seen=None) -> list:
    """Every tensor reachable from an object's attributes, lists, tuples and dicts (not through modules)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item, seen)]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item, seen)]
    if hasattr(value, "__dict__") and not isinstance(value, (torch.nn.Module, type)):
        return [t for item in vars(value).values() for t in _tensors(item, seen)]
    return []


@pytest.mark.parametrize("compile_", [None, "eager"])
def test_dropping_the_copy_frees_its_weights_kept_base_and_cache(tiny_model_dir, compile_):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, compile=compile_, prompt_budget=32, keep_base=True)
    fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    held = [weakref.ref(t) for t in _tensors(fast) + list(fast.model.parameters())
            if not any(t is p for p in policy.parameters())]
    old_cache = [weakref.ref(t) for t in _tensors(fast.decoder)]
    assert len(held) > len(list(fast.model.parameters())) and old_cache  # the kept bases and the cache are seen
    fast.start_stage(batch_size=4, max_new_tokens=8)
    gc.collect()
    assert all(ref() is None for ref in old_cache if not any(ref() is p for p in fast.model.parameters()))
    del fast
    gc.collect()
    assert all(ref() is None for ref in held)


def test_a_bf16_base_is_copied_exactly_into_an_fp32_copy(tiny_model_dir):
    """A bf16 base with an fp32 adapter, copied in fp32 (the CPU default): the copy is the policy computed in
    fp32 (its bf16 base values upcast), to fp32 rounding, at build and after a refresh; the bf16 policy's own
    compute is noisier than that, so it is the upcast policy that is compared."""
    import copy

    torch.manual_seed(0)
    policy = get_peft_model(_base(tiny_model_dir).to(torch.bfloat16),
                            LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy)
    assert next(fast.model.parameters()).dtype == torch.float32
    _assert_serves(fast, copy.deepcopy(policy).float(), batch, _greedy(tokenizer))
    with torch.no_grad():
        for parameter in _lora_parameters(policy, "lora_B"):
            parameter.add_(torch.randn_like(parameter))
    fast.refresh()
    _assert_serves(fast, copy.deepcopy(policy).float(), batch, _greedy(tokenizer))


@pytest.mark.parametrize("keep_base", [True, False])
def test_4bit_policy_merged_after_the_copy_was_built(scaled_model_dir, keep_base):
    """PEFT's `merge_adapter()` on a 4-bit base (it warns of rounding, and re-quantizes base + delta), in train
    mode (bitsandbytes computes from its plain layout): the copy serves the merged policy, and after
    `unmerge_adapter()` the unmerged one. Merged again, then an inference forward repacks the merged weights for
    bitsandbytes' CPU kernel: the refresh that follows serves them once (bit for bit what a fresh copy holds), not
    as a re-taken base plus the delta again."""
    policy = _qlora(scaled_model_dir).train()  # no dropout anywhere: train mode computes as eval, unpacked
    tokenizer, batch = _batch(scaled_model_dir)
    fast = MergedPolicy(policy, keep_base=keep_base)
    _assert_serves(fast, policy, batch, _greedy(tokenizer), rtol=1e-4)
    for change in (policy.merge_adapter, policy.unmerge_adapter, policy.merge_adapter):
        change()
        fast.refresh()
        _assert_serves(fast, policy, batch, _greedy(tokenizer), rtol=1e-4)
    policy.eval()
    with torch.no_grad():
        policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask)  # repacks every 4-bit weight
    fast.refresh()
    fresh = MergedPolicy(policy, keep_base=not keep_base)
    for (name, got), want in zip(fast.model.named_parameters(), fresh.model.parameters()):
        assert torch.equal(got, want), name


def test_refresh_after_release_policy_is_refused(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    fast = MergedPolicy(policy)
    fast.release_policy()
    with torch.no_grad():
        for parameter in _lora_parameters(policy, "lora_B"):
            parameter.add_(1.0)
    with pytest.raises(RuntimeError, match="releas"):
        fast.refresh()


@pytest.mark.parametrize("mask_dtype", [torch.int32, torch.bool])
def test_a_mask_of_another_integer_dtype_needs_no_new_graph(tiny_model_dir, mask_dtype):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    want = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           generation_config=_greedy(tokenizer))
    fast = MergedPolicy(policy, compile="eager", prompt_budget=32)
    fast.start_stage(batch_size=4, max_new_tokens=8)
    fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    produced = fast.generate(batch.input_ids, batch.attention_mask.to(mask_dtype), _greedy(tokenizer))
    assert produced.tolist() == want.tolist() and fast.graphs_built == 1


def test_a_policy_in_training_mode_with_dropout_and_checkpointing(tiny_model_dir):
    """As the trainer holds it: train mode, attention and LoRA dropout, gradient checkpointing, use_cache off.
    The copy must decode deterministically what the policy decodes in eval mode, compiled or not."""
    torch.manual_seed(0)
    base = _base(tiny_model_dir)
    base.config.attention_dropout = 0.5
    policy = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                             init_lora_weights=False, lora_dropout=0.3))
    policy.gradient_checkpointing_enable()
    policy.config.use_cache = False
    tokenizer, batch = _batch(tiny_model_dir)
    policy.eval()
    want = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           generation_config=_greedy(tokenizer)).tolist()
    policy.train()
    for fast in (MergedPolicy(policy), MergedPolicy(policy, compile="eager", prompt_budget=32)):
        for _ in range(2):
            assert fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer)).tolist() == want


def test_a_full_fine_tune_is_refreshed_whole_in_place(tiny_model_dir):
    """No adapter: every parameter trains (the tied embedding too); the compiled copy follows in place."""
    policy = _base(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, compile="eager", prompt_budget=32)
    fast.start_stage(batch_size=4, max_new_tokens=8)
    fast.generate(batch.input_ids, batch.attention_mask, _greedy(tokenizer))
    addresses = [p.data_ptr() for p in fast.model.parameters()]
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.5)
    policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.input_ids).loss.backward()
    optimizer.step()
    fast.refresh()
    assert [p.data_ptr() for p in fast.model.parameters()] == addresses
    _assert_serves(fast, policy, batch, _greedy(tokenizer))
    assert fast.graphs_built == 1


def test_a_gpt2_policy_with_fan_in_fan_out_lora(tiny_model_dir):
    """Another architecture: GPT-2's Conv1D layers (weights stored [in, out], LoRA with fan_in_fan_out),
    learned positions, no grouped-query attention; compiled, after a step on lora_B."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer, batch = _batch(tiny_model_dir)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2, n_head=4, n_positions=128,
                                       eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                       bos_token_id=tokenizer.eos_token_id)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 2:
                parameter.mul_(20)
    policy = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_proj", "c_fc"],
                                              fan_in_fan_out=True, init_lora_weights=False))
    fast = _serves_through(tiny_model_dir, policy, _move_lora_b, compile="eager", prompt_budget=32)
    assert fast.graphs_built == 1


@pytest.mark.parametrize("model_type, config", [
    ("bloom", {"hidden_size": 32, "n_layer": 2, "n_head": 4}),  # no pluggable attention
    ("ctrl", {"n_embd": 32, "n_layer": 2, "n_head": 4, "dff": 64})])  # no static-cache compile
def test_a_model_type_the_decoder_cannot_run_is_refused_at_build_by_name(tiny_model_dir, model_type, config):
    from transformers import AutoConfig

    tokenizer, _ = _batch(tiny_model_dir)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, vocab_size=len(tokenizer), **config))
    policy = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
    with pytest.raises(ValueError, match=f"model type '{model_type}'"):
        MergedPolicy(policy)


# ---------------------------------------------------------------------------------------------- in the trainer

def test_grpo_evaluation_with_a_larger_eval_batch_does_not_kill_the_run(tiny_model_dir, tmp_path):
    from datasets import Dataset

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    prompts = Dataset.from_list([{"prompt": f"What is {a} + 1?"} for a in range(8)])
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        per_device_train_batch_size=4, num_generations=4, max_completion_length=6, max_steps=1,
                        per_device_eval_batch_size=8, eval_strategy="steps", eval_steps=1, learning_rate=0.05,
                        logging_steps=1, disable_tqdm=True, seed=0, fast_generation="on")
    trainer = R1GRPOTrainer(model=str(tiny_model_dir), args=args, train_dataset=prompts, eval_dataset=prompts,
                            reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
                            peft_config=LoraConfig(r=4, target_modules="all-linear"))
    assert trainer.fast_generation
    trainer.train()
    assert any("eval_reward" in entry for entry in trainer.state.log_history)


def test_grpo_generation_settings_the_decoder_refuses_are_refused_when_the_trainer_is_built(tiny_model_dir, tmp_path):
    from datasets import Dataset

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    prompts = Dataset.from_list([{"prompt": f"What is {a} + 1?"} for a in range(8)])
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        per_device_train_batch_size=4, num_generations=4, max_completion_length=6, max_steps=1,
                        repetition_penalty=1.1, disable_tqdm=True, seed=0, fast_generation="on")
    with pytest.raises(ValueError, match="repetition_penalty"):
        R1GRPOTrainer(model=str(tiny_model_dir), args=args, train_dataset=prompts,
                      reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
                      peft_config=LoraConfig(r=4, target_modules="all-linear"))


def test_trainable_token_indices_are_refused_by_name(tiny_model_dir):
    """`trainable_token_indices` trains some rows of the embedding (PEFT's token adapter on embed_tokens)."""
    _, batch = _batch(tiny_model_dir)
    tokens = sorted(set(batch.input_ids.flatten().tolist()))[:6]
    policy = _policy(tiny_model_dir, target_modules=["q_proj"], trainable_token_indices=tokens)
    _serves_through(tiny_model_dir, policy, _train_base_tensors, refused="on an embedding")


def test_layer_replication_is_refused_by_name(tiny_model_dir):
    policy = _policy(tiny_model_dir, target_modules=["q_proj"], layer_replication=[[0, 2], [0, 2]])
    _serves_through(tiny_model_dir, policy, refused="layer_replication")


@pytest.mark.parametrize("keep_base", [None, False])
def test_a_bf16_policy_merged_after_the_copy_was_built(tiny_model_dir, keep_base):
    """A bf16 base (the kept base is an fp32 snapshot, not the live weight): merged, then unmerged (PEFT's
    ``W + delta - delta`` in bf16, not W again), each followed by a refresh."""
    import copy

    torch.manual_seed(0)
    policy = get_peft_model(_base(tiny_model_dir).to(torch.bfloat16),
                            LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    tokenizer, batch = _batch(tiny_model_dir)
    fast = MergedPolicy(policy, keep_base=keep_base)
    for change in (policy.merge_adapter, policy.unmerge_adapter):
        change()
        fast.refresh()
        _assert_serves(fast, copy.deepcopy(policy).float(), batch, _greedy(tokenizer))


def test_without_a_pad_token_finished_rows_are_padded_as_generate_pads_them(tiny_model_dir):
    policy = _policy(tiny_model_dir)
    tokenizer, batch = _batch(tiny_model_dir)
    policy.generation_config.pad_token_id = None
    first = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                            generation_config=GenerationConfig(max_new_tokens=1, do_sample=False))[:, -1]
    config = GenerationConfig(max_new_tokens=6, do_sample=False, eos_token_id=[int(first[0])])
    want = policy.generate(input_ids=batch.input_ids, attention_mask=batch.attention_mask, generation_config=config)
    width = batch.input_ids.size(1)
    assert want.size(1) > width + 1 and (want[0, width:] == first[0]).all()  # row 0 ends at once, padded with EOS
    fast = MergedPolicy(policy, prompt_budget=width)
    assert fast.generate(batch.input_ids, batch.attention_mask, config).tolist() == want.tolist()
    fast.start_stage(batch_size=2, max_new_tokens=6)  # in parts: each part padded to the batch's width
    assert fast.generate(batch.input_ids, batch.attention_mask, config).tolist() == want.tolist()


def test_a_refresh_leaves_the_4bit_policys_own_forward_untouched(scaled_model_dir):
    """`refresh` unpacks bitsandbytes' CPU layout to dequantize: on a copy of the state, so the policy (the trainer's
    forward) computes exactly what it computed before, refresh after refresh."""
    policy = _qlora(scaled_model_dir)
    policy.eval()
    _, batch = _batch(scaled_model_dir)
    fast = MergedPolicy(policy, keep_base=False)
    for _ in range(3):
        with torch.no_grad():
            for parameter in _lora_parameters(policy, "lora_A"):
                parameter.mul_(1.001)
            before = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
            fast.refresh()
            after = policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        assert torch.equal(before, after)


def test_start_stage_without_any_prompt_budget_says_what_is_missing(tiny_model_dir):
    fast = MergedPolicy(_policy(tiny_model_dir))
    with pytest.raises(ValueError, match="prompt_budget"):
        fast.start_stage(batch_size=4, max_new_tokens=8)


@pytest.mark.parametrize("quant_type, double_quant", [("nf4", True), ("fp4", True), ("nf4", False), ("fp4", False)])
def test_a_copy_built_after_the_4bit_policy_ran_is_as_close_as_before(scaled_model_dir, quant_type, double_quant):
    from transformers import BitsAndBytesConfig

    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant_type,
                                      bnb_4bit_use_double_quant=double_quant, bnb_4bit_compute_dtype=torch.float32)
    base = AutoModelForCausalLM.from_pretrained(scaled_model_dir, quantization_config=quantization,
                                                dtype=torch.float32)
    torch.manual_seed(0)
    policy = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                             init_lora_weights=False)).eval()
    _, batch = _batch(scaled_model_dir)
    before_forward = _logit_gap(MergedPolicy(policy, keep_base=False), policy, batch)  # this forward repacks
    assert _logit_gap(MergedPolicy(policy, keep_base=False), policy, batch) <= 2 * before_forward


@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
@pytest.mark.parametrize("double_quant", [True, False])
@pytest.mark.parametrize("shape", [(64, 128), (128, 64), (96, 192)])
def test_a_cpu_packed_4bit_weight_dequantizes_as_bitsandbytes_dequantizes_it(quant_type, double_quant, shape):
    """After bitsandbytes repacks a 4-bit weight for its CPU kernel (an inference forward), the copy's
    dequantization equals `bitsandbytes.functional.dequantize_4bit` of the same weight before the repack, with the
    block scales the kernel now computes with (rounded to bf16, as the repack stores them)."""
    import copy

    import bitsandbytes as bnb
    from bitsandbytes.functional import dequantize_4bit, dequantize_blockwise

    from trl_r1.data.fast_generation import _dense

    torch.manual_seed(0)
    out_features, in_features = shape
    layer = bnb.nn.Linear4bit(in_features, out_features, bias=False, compute_dtype=torch.float32,
                              quant_type=quant_type, compress_statistics=double_quant)
    layer.weight = bnb.nn.Params4bit(20 * torch.randn(shape), requires_grad=False, quant_type=quant_type,
                                     compress_statistics=double_quant).to("cpu")
    data, state = layer.weight.data.clone(), copy.deepcopy(layer.weight.quant_state)
    plain = dequantize_4bit(data, state)
    assert torch.equal(_dense(layer.weight), plain)  # before the repack: bitsandbytes' own
    layer.eval()
    with torch.no_grad():
        layer(torch.randn(2, in_features))
    if not getattr(layer.weight.quant_state, "packing_format_for_cpu", False):
        pytest.skip("this CPU has no AVX512-BF16 kernel: bitsandbytes does not repack")
    scales = dequantize_blockwise(state.absmax, state.state2) + state.offset if state.nested else state.absmax
    state.absmax, state.nested = scales.to(torch.bfloat16).float(), False
    assert torch.equal(_dense(layer.weight), dequantize_4bit(data, state))
    assert torch.allclose(_dense(layer.weight), plain, rtol=2**-8, atol=0)


def test_an_activated_lora_is_refused_by_name(tiny_model_dir):
    tokenizer, _ = _batch(tiny_model_dir)
    invocation = tokenizer("<|im_start|>assistant\n", add_special_tokens=False).input_ids
    policy = _policy(tiny_model_dir, target_modules=["q_proj", "k_proj", "v_proj"], task_type="CAUSAL_LM",
                     alora_invocation_tokens=invocation)
    _serves_through(tiny_model_dir, policy, refused="activated LoRA")
