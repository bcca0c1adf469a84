"""The fast generation path (`trl_r1.data.fast_generation`): a merged copy of a QLoRA policy generates what the
policy generates, and serves the new adapter after a training step (CPU, fp32, the tiny model in 4-bit: the toy
reasoner, whose confident logits leave no near-ties for float32 rounding to flip in greedy decoding)."""

import pytest
import torch

from trl_r1.data.fast_generation import MergedPolicy, merged_copy_unsupported_reason

# Per-token log-probs of sampled completions, copy vs policy (fp32 on CPU): the copy computes (W + sBA)x where the
# policy computes Wx + s B(Ax), so they differ by float32 rounding only.
LOGPROB_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def qlora_policy(toy_reasoner):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    base = AutoModelForCausalLM.from_pretrained(toy_reasoner, dtype=torch.float32, quantization_config=BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32))
    torch.manual_seed(0)  # a non-zero adapter (B = 0 at PEFT's init would hide a missing merge)
    policy = get_peft_model(base, LoraConfig(r=8, target_modules="all-linear", init_lora_weights=False)).eval()
    for module in policy.modules():  # compute as in training (fp32 dequantization), not with bitsandbytes' bf16
        if hasattr(module, "support_avx512bf16_for_cpu"):  # CPU inference kernel, which rounds activations
            module.support_avx512bf16_for_cpu = False
    tokenizer = AutoTokenizer.from_pretrained(toy_reasoner, padding_side="left")
    return policy, tokenizer


def _prompts(tokenizer):
    chats = [[{"role": "user", "content": question}] for question in ("What is 2 + 3?", "What is 14 + 27?", "7 + 1?")]
    texts = [tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) for chat in chats]
    return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)


def _greedy(tokenizer, new_tokens=24):
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=None,
                            pad_token_id=tokenizer.pad_token_id)


@pytest.mark.parametrize("compile", [False, "eager"])
def test_greedy_tokens_of_the_copy_equal_the_4bit_policys(qlora_policy, compile):
    """The stage's decoder (static cache, grouped attention) eager and compiled (dynamo's graph) decodes what the
    4-bit policy's `generate` decodes."""
    policy, tokenizer = qlora_policy
    batch, config = _prompts(tokenizer), _greedy(tokenizer)
    fast = MergedPolicy(policy, compile=compile)
    with torch.inference_mode():
        expected = policy.generate(**batch, generation_config=config)
    got = fast.generate(batch["input_ids"], batch["attention_mask"], config)
    assert got.shape == expected.shape
    assert torch.equal(got, expected)


def _completion_logps(model, sequences, prompt_mask):
    completion_mask = torch.ones_like(sequences[:, prompt_mask.size(1):])
    mask = torch.cat([prompt_mask, completion_mask], dim=1)
    with torch.inference_mode():
        logits = model(input_ids=sequences, attention_mask=mask).logits[:, prompt_mask.size(1) - 1:-1]
    return logits.log_softmax(-1).gather(-1, sequences[:, prompt_mask.size(1):, None]).squeeze(-1)


def test_sampled_completions_have_the_policys_log_probs_within_tolerance(qlora_policy):
    from transformers import GenerationConfig

    policy, tokenizer = qlora_policy
    batch = _prompts(tokenizer)
    fast = MergedPolicy(policy)
    torch.manual_seed(1)
    sampled = fast.generate(batch["input_ids"], batch["attention_mask"], GenerationConfig(
        max_new_tokens=32, do_sample=True, top_k=0, num_return_sequences=4, eos_token_id=None,
        pad_token_id=tokenizer.pad_token_id))
    prompt_mask = batch["attention_mask"].repeat_interleave(4, dim=0)
    ours, theirs = _completion_logps(fast.model, sampled, prompt_mask), _completion_logps(policy, sampled, prompt_mask)
    assert ours.shape == (12, 32)
    assert (ours - theirs).abs().max() < LOGPROB_TOLERANCE
    with policy.disable_adapter():  # the adapter matters: without it the log-probs are far off
        assert (ours - _completion_logps(policy, sampled, prompt_mask)).abs().max() > 100 * LOGPROB_TOLERANCE


def test_refresh_serves_a_changed_adapter_and_never_touches_the_4bit_base(qlora_policy):
    policy, tokenizer = qlora_policy
    fast = MergedPolicy(policy)
    batch = _prompts(tokenizer)
    q_proj = policy.get_base_model().model.layers[0].self_attn.q_proj
    packed = q_proj.base_layer.weight.data.clone()
    lora_b = q_proj.lora_B["default"].weight
    saved = lora_b.detach().clone()
    try:
        with torch.no_grad():
            lora_b.mul_(-3.0)
        with torch.inference_mode():
            stale = fast.model(**batch).logits
            fast.refresh()
            fresh, expected = fast.model(**batch).logits, policy(**batch).logits
        mask = batch["attention_mask"].bool()
        assert not torch.allclose(stale[mask], expected[mask], atol=1e-3)
        torch.testing.assert_close(fresh[mask], expected[mask], atol=1e-4, rtol=1e-4)
        assert torch.equal(q_proj.base_layer.weight.data, packed)  # the 4-bit weights are never re-quantized
    finally:
        with torch.no_grad():
            lora_b.copy_(saved)


def test_what_the_copy_refuses_says_why(tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert merged_copy_unsupported_reason(model) is None
    dora = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj"], use_dora=True))
    assert merged_copy_unsupported_reason(dora) == "DoRA adapters are not merged by the copy"
    with pytest.raises(ValueError, match="cannot be copied for fast generation: DoRA"):
        MergedPolicy(dora)


def test_a_grpo_step_refreshes_the_copy_it_generates_from(tmp_path, tiny_model_dir):
    """A real R1GRPOTrainer run on the tiny 4-bit QLoRA: the second generation batch comes from a copy holding the
    adapter after the first optimizer step, not the initial one."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import BitsAndBytesConfig, TrainerCallback

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    class Snapshot(TrainerCallback):
        """The copy's q_proj weight, and the policy's merged q_proj weight, after each optimizer step."""

        def __init__(self):
            self.copy_weights, self.expected = [], []

        def on_step_end(self, args, state, control, **kwargs):
            fast = trainer.fast_policy_generation.policy_copy
            self.copy_weights.append(fast.model.model.layers[0].self_attn.q_proj.weight.detach().clone())
            layer = trainer.model.get_base_model().model.layers[0].self_attn.q_proj
            from bitsandbytes.functional import dequantize_4bit

            weight = layer.base_layer.weight
            self.expected.append(dequantize_4bit(weight.data, weight.quant_state) + layer.get_delta_weight("default"))

    prompts = Dataset.from_list([{"prompt": f"What is {a} + 1?"} for a in range(8)])
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                        per_device_train_batch_size=4, num_generations=4, max_completion_length=6, max_steps=2,
                        learning_rate=0.05, logging_steps=1, disable_tqdm=True, seed=0, fast_generation="on")
    snapshot = Snapshot()
    trainer = R1GRPOTrainer(
        model=str(tiny_model_dir), args=args, train_dataset=prompts, callbacks=[snapshot],
        reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
        peft_config=LoraConfig(r=4, target_modules="all-linear"),
        quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float32))
    assert trainer.fast_generation and "merged copy" in trainer.fast_generation_reason
    trainer.train()
    generation = trainer.fast_policy_generation
    assert generation.refreshed_at_step == 1  # the second batch was generated after the first optimizer step
    decoder = generation.policy_copy.decoder  # one decoder at the stage's shape: TRL's generation batch, budget
    # the prompts are a few tokens: the budget is the longest rounded up to 64, not the key (512)
    assert (decoder.batch_size, decoder.prompt_budget, decoder.max_new_tokens) == (4, 64, 6)
    first, second = snapshot.copy_weights
    assert not torch.allclose(first, second)  # the copy changed with the adapter...
    torch.testing.assert_close(second, snapshot.expected[0].to(second.dtype))  # ...to the one after step 1


def test_a_generator_asked_for_fast_generation_samples_what_plain_generate_samples(toy_reasoner, tmp_path):
    """Rejection sampling and evaluation: `TransformersGenerator(fast=True)` decodes from the merged copy alone (the
    PEFT model is dropped) and, greedy, writes the same completions (a LoRA on the float32 base: bitsandbytes'
    CPU inference kernel would round a 4-bit base's activations to bf16 in the plain path)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from trl_r1.data.generation import SamplingParams, TransformersGenerator

    torch.manual_seed(0)
    adapter = get_peft_model(AutoModelForCausalLM.from_pretrained(toy_reasoner),
                             LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    with torch.no_grad():  # a small change, so that the toy reasoner still answers confidently
        for name, parameter in adapter.named_parameters():
            if "lora_B" in name:
                parameter.mul_(0.1)
    adapter.save_pretrained(tmp_path / "adapter")
    prompts = [[{"role": "user", "content": f"What is {a} + {a + 3}?"}] for a in range(4)]
    greedy = SamplingParams(num_samples=1, max_new_tokens=32, temperature=0.0)
    plain = TransformersGenerator(toy_reasoner, adapter_path=str(tmp_path / "adapter"), fast=False)
    fast = TransformersGenerator(toy_reasoner, adapter_path=str(tmp_path / "adapter"), fast=True)
    assert fast.describe()["fast_generation"] and not hasattr(fast.model, "peft_config")
    expected = [g[0].content for g in plain.generate(prompts, greedy, seed=0)]
    assert [g[0].content for g in fast.generate(prompts, greedy, seed=0)] == expected
    assert len(set(expected)) > 1  # real, different answers


def test_a_policy_without_an_adapter_is_copied_whole_at_each_refresh(tiny_model_dir):
    """A full fine-tune changes every weight: the refresh copies them all (and the tie of the LM head holds)."""
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    fast = MergedPolicy(policy)
    assert fast.model.lm_head.weight is fast.model.model.embed_tokens.weight
    with torch.no_grad():
        policy.model.norm.weight.mul_(2.0)
        policy.model.embed_tokens.weight.add_(0.5)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.inference_mode():
        stale = fast.model(ids).logits
        fast.refresh()
        fresh, expected = fast.model(ids).logits, policy(ids).logits
    assert not torch.allclose(stale, expected, atol=1e-3)
    torch.testing.assert_close(fresh, expected)


def test_the_trainer_says_which_generation_it_uses_and_why(tmp_path, tiny_model_dir):
    """`auto` keeps TRL's generate on CPU (the copy is no faster there past a tiny model, compiled or not:
    benchmarks/generation.py, docs/data.md); `on` with a
    policy the copy cannot serve fails before training, naming why."""
    from datasets import Dataset
    from peft import LoraConfig

    from trl_r1.trainers import R1GRPOConfig, R1GRPOTrainer

    prompts = Dataset.from_list([{"prompt": "What is 1 + 1?"}] * 4)

    def trainer(setting, **peft):
        args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", per_device_train_batch_size=4,
                            num_generations=4, max_completion_length=4, fast_generation=setting)
        return R1GRPOTrainer(model=str(tiny_model_dir), args=args, train_dataset=prompts,
                             reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                             peft_config=LoraConfig(r=4, target_modules=["q_proj"], **peft))

    auto = trainer("auto")
    assert not auto.fast_generation and "on CPU the copy is no faster" in auto.fast_generation_reason
    with pytest.raises(ValueError, match="fast_generation: on, but .*DoRA"):
        trainer("on", use_dora=True)
    with pytest.raises(ValueError, match="fast_generation='fast' is not one of"):
        R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", fast_generation="fast")


def _tiny_qlora(model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, quantization_config=BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32))
    torch.manual_seed(0)
    return get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))


def _exact_merged(layer):
    """The adapted layer's weight in float32: dequantized base + PEFT's delta."""
    from trl_r1.data.fast_generation import _dense

    return _dense(layer.get_base_layer().weight).float() + layer.get_delta_weight("default").float()


def test_refresh_rewrites_only_the_layers_whose_adapter_changed(tiny_model_dir):
    """A refresh with no optimizer step rewrites nothing; one changed LoRA tensor rewrites its layer alone, from
    the kept base, to the exact merged weight."""
    policy = _tiny_qlora(tiny_model_dir)
    fast = MergedPolicy(policy, keep_base=True)
    adapted = len(fast._adapted)
    assert fast.layers_rewritten == adapted > 1  # the first refresh writes them all
    fast.refresh()
    assert fast.layers_rewritten == 0
    layer = policy.get_base_model().model.layers[0].mlp.down_proj
    with torch.no_grad():
        layer.lora_B["default"].weight.mul_(-2.0)
    fast.refresh()
    assert fast.layers_rewritten == 1
    torch.testing.assert_close(fast.model.model.layers[0].mlp.down_proj.weight, _exact_merged(layer))
    with policy.disable_adapter():  # switching the adapter off is a change too: the base alone
        fast.refresh()
        assert fast.layers_rewritten == adapted
        torch.testing.assert_close(fast.model.model.layers[0].mlp.down_proj.weight,
                                   _exact_merged(layer) - layer.get_delta_weight("default"))


def test_a_hundred_bf16_refreshes_accumulate_no_error(tiny_model_dir):
    """100 optimizer-like updates of every LoRA tensor, each followed by a refresh of a bf16 copy from its kept
    base: the copy equals, bit for bit, a copy built fresh from the final adapter (no drift, as a running
    ``W += new delta - old delta`` would have), within bf16 rounding of the exact float32 merge."""
    policy = _tiny_qlora(tiny_model_dir)
    fast = MergedPolicy(policy, dtype=torch.bfloat16, keep_base=True)
    generator = torch.Generator().manual_seed(0)
    lora = [p for n, p in policy.named_parameters() if "lora_" in n]
    for _ in range(100):
        with torch.no_grad():
            for param in lora:
                param.add_(torch.randn(param.shape, generator=generator) * 1e-2)
        fast.refresh()
        assert fast.layers_rewritten == len(fast._adapted)
    fresh = MergedPolicy(policy, dtype=torch.bfloat16, keep_base=False)
    for (ours, layer), (theirs, _) in zip(fast._adapted, fresh._adapted):
        assert torch.equal(ours, theirs)
        delta = layer.get_delta_weight("default").float()
        base = _exact_merged(layer) - delta
        # three bf16 roundings (the base, the delta, their sum), each within 2**-9 of what it rounds
        assert ((ours.float() - base - delta).abs() <= (base.abs() + delta.abs()) * 2**-7).all()
