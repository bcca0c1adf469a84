"""Issue 33: the fast path's prompt budget from the data. The dry run checks the rl stage's prompts against
`fast_generation_max_prompt_length` (a count in the plan, or a refusal past `FAST_PROMPT_CUT_LIMIT`), and the memory
model sizes the static cache from the data's longest prompt when it is shorter than the key."""

import json
from dataclasses import replace
from pathlib import Path

from tests.conftest import dry_run, fails_once, recipe
from trl_r1.data.fast_generation import fast_prompt_budget
from trl_r1.trainers.memory import GRPOSettings, estimate_grpo_peak, kv_bytes_per_token, model_shapes


def long_prompts(count: int) -> None:
    """`count` of the rl stage's 40 prompts made about 300 tokens long."""
    rows = [json.loads(line) for line in Path("prompts.jsonl").read_text().splitlines()]
    for row in rows[:count]:
        row["prompt"] = "add " * 300 + row["prompt"] if isinstance(row["prompt"], str) else [
            {**turn, "content": "add " * 300 + turn["content"]} for turn in row["prompt"]]
    Path("prompts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_a_dry_run_refuses_when_the_fast_path_would_cut_many_prompts(workdir, capsys):
    long_prompts(4)  # 10 % of the prompts, over the 5 % limit
    fails_once(capsys, recipe(rl={"fast_generation": "on", "fast_generation_max_prompt_length": 256}),
               "rl: 4 of 40 prompts (10.0%) are longer than fast_generation_max_prompt_length 256",
               "raise fast_generation_max_prompt_length to", "or set fast_generation: off")


def test_a_dry_run_counts_the_few_prompts_the_fast_path_cuts(workdir, capsys):
    long_prompts(1)  # 2.5 %: a note with the count, no refusal
    code, problems, plan = dry_run(capsys, recipe(rl={"fast_generation": "on",
                                                      "fast_generation_max_prompt_length": 256}))
    assert (code, problems) == (0, [])
    assert "rl: 1 of 40 prompts (2.5%) are longer than fast_generation_max_prompt_length 256" in plan
    assert "counted in a WARNING at run time" in plan


def test_auto_on_cpu_notes_the_cut_without_refusing(workdir, capsys):
    """`auto` takes plain generate on CPU: the count is a note for when the fast path runs (on a GPU)."""
    long_prompts(10)
    code, problems, plan = dry_run(capsys, recipe(rl={"fast_generation_max_prompt_length": 256}))
    assert (code, problems) == (0, [])
    assert "rl: 10 of 40 prompts (25.0%) are longer" in plan and "when the fast path runs" in plan


def test_the_static_cache_is_sized_from_the_datas_longest_prompt():
    qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    fast = GRPOSettings(max_prompt_length=512, fast_generation=True)
    budget = fast_prompt_budget(512, 130)
    assert budget == 192
    at_key, from_data = estimate_grpo_peak(qwen, fast), estimate_grpo_peak(
        qwen, replace(fast, fast_generation_prompt_length=budget))
    sequences = fast.per_device_train_batch_size * fast.gradient_accumulation_steps
    cache_saved = sequences * (512 - 192) * kv_bytes_per_token(qwen)
    assert at_key.decoder - from_data.decoder > cache_saved  # the cache, and the graph pool's scores
    assert at_key.training == from_data.training  # the training step still sees max_prompt_length


def test_the_dry_runs_memory_check_counts_the_copy_at_the_datas_budget(tmp_path):
    """The rl stage's estimated peak on a card: the copy and its static cache where the trainer takes the fast path
    (`on`, or `auto` where it fits), the cache at the budget from the data's longest prompt; plain elsewhere."""
    from trl_r1.pipeline.preflight import rl_step_peak
    from trl_r1.trainers import R1GRPOConfig

    qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]

    def peak(setting: str, card_gb: float = 80, longest: int | None = None) -> float:
        config = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", fast_generation=setting)
        # 32 sequences generated, one trained at a time: the generation's peak is the step's
        settings = GRPOSettings(per_device_train_batch_size=1, gradient_accumulation_steps=32)
        return rl_step_peak(config, settings, qwen, card_gb, longest, vllm=False)[0]

    plain = peak("off")
    assert peak("on") > plain  # the merged copy and the static cache
    assert plain < peak("on", longest=100) < peak("on")  # a 128-token budget, not the key's 512
    assert peak("auto", longest=100) == peak("on", longest=100)  # auto takes the copy where it fits (80 GB)
    assert peak("auto", card_gb=4) == peak("off", card_gb=4)  # and plain generate where it does not
