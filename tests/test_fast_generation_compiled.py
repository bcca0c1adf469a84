"""The fast path's compiled decoder on CPU with the compile forced (issue 33): one graph per stage whatever the
data, never a silent eager fallback, no per-step copy of the KV cache for grouped-query attention, `refresh()` in
place. The compile runs dynamo with a graph-counting backend (`GraphCounter("eager")`: the graph is traced and
guarded as on a GPU, without inductor's minutes); one test runs inductor itself."""

import logging

import pytest
import torch

from trl_r1.data.fast_generation import FallbackToEager, GraphCounter, MergedPolicy, StageDecoder


def _gqa_model(seed=0, layers=2):
    """A tiny Qwen2 with grouped-query attention (4 query heads over 2 KV heads), random weights."""
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return AutoModelForCausalLM.from_config(config).eval()


def _greedy(new_tokens, eos=None):
    from transformers import GenerationConfig

    return GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=eos, pad_token_id=0)


def _batch(rows, width, generator):
    """Left-padded prompts of random lengths up to `width` (token 0 is the pad)."""
    ids = torch.randint(1, 96, (rows, width), generator=generator)
    lengths = torch.randint(1, width + 1, (rows,), generator=generator)
    mask = (torch.arange(width)[None] >= width - lengths[:, None]).long()
    return ids * mask, mask


def test_a_rollout_of_mixed_calls_builds_one_graph_and_decodes_every_step_compiled():
    """11 calls: prompts of 5 to 40 tokens, a short last batch, max_new_tokens 12 and 6, one with EOS; each equals
    eager `generate`, one graph in all, and every decoding step after the prefill ran the compiled graph."""
    model = _gqa_model()
    fast = MergedPolicy(model, compile="eager", prompt_budget=40)
    fast.start_stage(batch_size=6, max_new_tokens=12)
    generator = torch.Generator().manual_seed(0)
    steps = 0
    for call, (rows, width, new_tokens) in enumerate(
            [(6, 5, 12), (6, 40, 12), (6, 17, 6), (6, 33, 12), (6, 9, 6), (6, 28, 12), (6, 40, 6), (6, 12, 12),
             (6, 21, 6), (6, 36, 12), (3, 14, 12)]):
        ids, mask = _batch(rows, width, generator)
        config = _greedy(new_tokens, eos=7 if call == 3 else None)
        got = fast.generate(ids, mask, config)
        with torch.inference_mode():
            expected = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
        assert torch.equal(got, expected), call
        steps += got.size(1) - width - 1
    assert fast.graphs_built == 1
    assert fast.decoder.compiled_steps == steps


def test_the_decoder_matches_generate_under_sampling_settings():
    """TRL's sampling settings (temperature, top-k, top-p) through the same warpers: same seed, same tokens."""
    from transformers import GenerationConfig

    model = _gqa_model()
    fast = MergedPolicy(model, compile="eager", prompt_budget=16)
    ids, mask = _batch(4, 16, torch.Generator().manual_seed(1))
    config = GenerationConfig(max_new_tokens=8, do_sample=True, temperature=0.7, top_k=20, top_p=0.9,
                              eos_token_id=None, pad_token_id=0, num_return_sequences=2)
    torch.manual_seed(3)
    got = fast.generate(ids, mask, config)
    assert got.shape == (8, 24) and torch.equal(got[:, :16], ids.repeat_interleave(2, 0))
    assert len({tuple(row) for row in got[:, 16:].tolist()}) > 1  # sampled, not one greedy answer
    with pytest.raises(ValueError, match="does not implement .*repetition_penalty"):
        fast.generate(ids, mask, GenerationConfig(max_new_tokens=4, repetition_penalty=1.2, pad_token_id=0))


def test_generators_and_stages_in_one_process_never_fall_back():
    """Five generators, two stages each (ten graphs, more than dynamo's shared limit of 8 per code object): each
    decoder compiles its own function, so none recompiles into another's limit and none decodes eager."""
    generator = torch.Generator().manual_seed(2)
    fasts = [MergedPolicy(_gqa_model(seed), compile="eager", prompt_budget=20) for seed in range(5)]
    for stage, (batch, new_tokens) in enumerate([(4, 6), (2, 9)]):
        for fast in fasts:
            fast.start_stage(batch_size=batch, max_new_tokens=new_tokens)
        for _ in range(2):
            for fast in fasts:
                ids, mask = _batch(batch, 20, generator)
                with torch.inference_mode():
                    expected = fast.model.generate(input_ids=ids, attention_mask=mask,
                                                   generation_config=_greedy(new_tokens))
                assert torch.equal(fast.generate(ids, mask, _greedy(new_tokens)), expected)
        assert [fast.graphs_built for fast in fasts] == [1] * 5, stage
        assert [fast.decoder.compiled_steps for fast in fasts] == [2 * (new_tokens - 1)] * 5


def test_a_recompile_within_a_stage_raises_naming_the_cause_and_the_fix():
    """A changed model (here: put in training mode) would need a second graph: an error, never a silent eager
    decode."""
    fast = MergedPolicy(_gqa_model(), compile="eager", prompt_budget=8)
    ids, mask = _batch(2, 8, torch.Generator().manual_seed(0))
    fast.generate(ids, mask, _greedy(4))
    fast.model.train()
    with pytest.raises(FallbackToEager, match="would build graph 2 .*fast_generation: off"):
        fast.generate(ids, mask, _greedy(4))


def test_a_prompt_over_the_budget_is_cut_from_the_left_and_counted(caplog):
    model = _gqa_model()
    fast = MergedPolicy(model, compile="eager", prompt_budget=10)
    ids = torch.randint(1, 96, (2, 16), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, :8], ids[1, :8] = 0, 0  # 8 tokens: within the budget
    with caplog.at_level(logging.WARNING, logger="trl_r1.data.fast_generation"):
        got = fast.generate(ids, mask, _greedy(5))
    assert ("1 of 2 prompts are longer than the stage's prompt budget (fast_generation_max_prompt_length=10 "
            "tokens, longest 16)") in caplog.text
    assert torch.equal(got[:, :16], ids)  # the prompts come back as given, as `generate` returns them
    with torch.inference_mode():  # the first prompt was decoded from its last 10 tokens
        expected = model.generate(input_ids=ids[:1, -10:], attention_mask=mask[:1, -10:],
                                  generation_config=_greedy(5))
    assert torch.equal(got[0, 16:], expected[0, 10:])
    wider = fast.generate(ids.repeat(2, 1)[:3], mask.repeat(2, 1)[:3], _greedy(5))  # 3 rows, a 2-row decoder
    assert torch.equal(wider[:2, : got.size(1)], got) and torch.equal(wider[2, : got.size(1)], got[0])  # in parts
    with pytest.raises(ValueError, match="holds 2 sequences x 5 new tokens; a call asked for 2 x 6"):
        fast.generate(ids, mask, _greedy(6))


def _expands_over(graph, length, head_dim=16):
    """The graph's expand / repeat / cat nodes whose result is K or V over `length` positions (a copy of the cache;
    the attention mask's broadcast is not one)."""
    found = []
    for node in graph.graph.nodes:
        name = str(node.target)
        if any(op in name for op in ("expand", "repeat", "cat")):
            value = node.meta.get("example_value")
            if isinstance(value, torch.Tensor) and length in value.shape and value.shape[-1] == head_dim:
                found.append((name, tuple(value.shape)))
    return found


def test_the_decode_graph_holds_no_copy_of_the_cache_for_grouped_query_attention():
    """Traced decode graph (dynamo's FX graph): the grouped attention reads K and V as they lie; transformers' SDPA
    path, compiled, expands them to every head over the cache length (the control)."""
    model = _gqa_model()
    ids, mask = _batch(2, 24, torch.Generator().manual_seed(0))
    fast = MergedPolicy(model, compile="eager", prompt_budget=24)
    got = fast.generate(ids, mask, _greedy(6))
    cache_length = fast.decoder.cache_length
    assert cache_length == 30 and fast.graphs_built == 1
    assert _expands_over(fast.decoder.backend.last_graph, cache_length) == []
    with torch.inference_mode():
        assert torch.equal(got, model.generate(input_ids=ids, attention_mask=mask, generation_config=_greedy(6)))
    fast.model.set_attn_implementation("sdpa")
    plain = StageDecoder(fast.model, 2, 24, 6, GraphCounter("eager"))
    assert torch.equal(plain.generate(ids, mask, _greedy(6)), got)
    assert _expands_over(plain.backend.last_graph, cache_length)  # repeat_kv: [2, 2, 2, 30, 16] per layer


def test_refresh_after_an_optimizer_step_keeps_addresses_needs_no_recompile_and_matches_the_policy():
    """A LoRA policy (GQA), one real AdamW step on a loss, `refresh()`: the copy's tensors keep their addresses, the
    stage's one graph serves the new weights, and greedy tokens equal the trained policy's."""
    from peft import LoraConfig, get_peft_model

    model = _gqa_model()
    policy = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    fast = MergedPolicy(policy, compile="eager", prompt_budget=12)
    ids, mask = _batch(3, 12, torch.Generator().manual_seed(5))
    before = fast.generate(ids, mask, _greedy(8))
    addresses = [p.data_ptr() for p in fast.model.parameters()]
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=0.05)
    policy.train()
    loss = policy(input_ids=ids, attention_mask=mask, labels=ids).loss
    loss.backward()
    optimizer.step()
    policy.eval()
    fast.refresh()
    after = fast.generate(ids, mask, _greedy(8))
    with torch.inference_mode():
        expected = policy.generate(input_ids=ids, attention_mask=mask, generation_config=_greedy(8))
    assert torch.equal(after, expected)
    assert not torch.equal(after, before)  # the step changed what the policy says
    assert [p.data_ptr() for p in fast.model.parameters()] == addresses
    assert fast.graphs_built == 1 and fast.decoder.compiled_steps == 14


@pytest.mark.slow
def test_inductor_compiles_one_graph_that_decodes_what_eager_decodes():
    """The real compiler (inductor, C++ on CPU) once: three calls of mixed prompts, one graph, eager's tokens."""
    model = _gqa_model(layers=1)
    fast = MergedPolicy(model, compile=True, prompt_budget=16)
    fast.start_stage(batch_size=3, max_new_tokens=5)
    generator = torch.Generator().manual_seed(6)
    for rows, width in [(3, 16), (3, 7), (2, 11)]:
        ids, mask = _batch(rows, width, generator)
        with torch.inference_mode():
            expected = model.generate(input_ids=ids, attention_mask=mask, generation_config=_greedy(5))
        assert torch.equal(fast.generate(ids, mask, _greedy(5)), expected)
    assert fast.graphs_built == 1 and fast.decoder.compiled_steps == 12


def test_without_a_prompt_budget_the_decoder_grows_and_cuts_nothing(caplog):
    """Rejection sampling and evaluation copy the policy without a budget: a longer later batch gets a larger
    decoder (one more graph, a WARNING), never cut prompts."""
    model = _gqa_model()
    fast = MergedPolicy(model, compile="eager")
    generator = torch.Generator().manual_seed(7)
    for rows, width in [(2, 8), (2, 5), (3, 14)]:
        ids, mask = _batch(rows, width, generator)
        mask[:, -width:] = 1  # every prompt full width
        ids = ids.clamp(min=1)
        with caplog.at_level(logging.WARNING, logger="trl_r1.data.fast_generation"):
            got = fast.generate(ids, mask, _greedy(4))
        with torch.inference_mode():
            assert torch.equal(got, model.generate(input_ids=ids, attention_mask=mask, generation_config=_greedy(4)))
    assert "outgrows the decoder (2 x 8 + 4): a new one is built" in caplog.text
    assert "cut from the left" not in caplog.text
    assert (fast.decoder.batch_size, fast.decoder.prompt_budget, fast.graphs_built) == (3, 14, 1)


def test_min_new_tokens_holds_eos_back_as_generate_does():
    from transformers import GenerationConfig

    model = _gqa_model()
    fast = MergedPolicy(model, compile="eager", prompt_budget=10)
    fast.start_stage(batch_size=2, max_new_tokens=8)
    ids, mask = _batch(2, 10, torch.Generator().manual_seed(8))
    first = fast.generate(ids, mask, _greedy(1))[:, -1].tolist()  # each row's first greedy token, made EOS below
    config = GenerationConfig(max_new_tokens=8, min_new_tokens=5, do_sample=False, eos_token_id=first,
                              pad_token_id=0)
    with torch.inference_mode():
        expected = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
    assert torch.equal(fast.generate(ids, mask, config), expected)
    assert expected.size(1) >= 15  # EOS held back for 5 tokens
