"""Issue 34: what a stage's resolved plan says (`StagePlan.generation`, `load_in_4bit`, `evaluation_4bit`, its seed,
batch and lengths) is what the run builds, for every shipped recipe (shortened as `--smoke` does, on its rehearsed
model): the trainer each training stage constructs and the sampler config rejection sampling runs with are built by
the same functions the run calls (`stages.make_trainer`, `RejectionSamplingStage.sampling_config`), then compared
with the plan the dry run prints."""

import datasets
import pytest
import yaml

from trl_r1.data.generation import resolve_backend
from trl_r1.pipeline import load_recipe
from trl_r1.pipeline.runner import Pipeline
from trl_r1.pipeline.smoke import prepare_smoke, smoke_model_id
from trl_r1.pipeline.stages import STAGE_REGISTRY, ModelHandle, make_trainer
from trl_r1.trainers.chat_templates import prepare_assistant_only_loss
from trl_r1.trainers.trl_compat import shutdown_trainer_vllm

from tests.test_recipes_smoke import FAST_TIER_RECIPE, GROUPS, ROOT

CHAT = datasets.Dataset.from_list([{"messages": [{"role": "user", "content": "1+1?"},
                                                 {"role": "assistant", "content": "<think>1+1=2</think> 2"}]}] * 4)


def trainer_backend(trainer) -> str:
    """What a built trainer generates with: vllm (TRL's push or the adapter unmerged) or transformers."""
    return "vllm" if getattr(trainer, "use_vllm", False) else "transformers"


def check_trainer(plan, pipeline) -> None:
    stage = STAGE_REGISTRY[plan.name]
    base = ModelHandle(pipeline.base_model_path)  # the run's starting model is this base, or a merged copy of it
    if plan.kind == "sft":
        prepare_assistant_only_loss(plan.config, base.model_path, plan.output_dir)  # as `SFTStage.run` does
        trainer = make_trainer(plan, base, CHAT)
    else:
        from trl_r1.rewards import get_reward_funcs

        trainer = make_trainer(plan, base, stage.prompts(plan, pipeline),
                               reward_funcs=get_reward_funcs(stage.rewards(plan, pipeline)))
    try:
        args, config = trainer.args, plan.config
        assert bool(getattr(trainer.model, "is_loaded_in_4bit", False)) == plan.load_in_4bit, plan.name
        assert (args.seed, args.bf16, args.per_device_train_batch_size, args.gradient_accumulation_steps) == (
            plan.seed, config.bf16, config.per_device_train_batch_size, config.gradient_accumulation_steps), plan.name
        if plan.kind == "sft":
            assert args.max_length == config.max_length
        else:
            assert args.max_completion_length == config.max_completion_length
            assert trainer_backend(trainer) == plan.generation, plan.name
    finally:
        shutdown_trainer_vllm(trainer)


# the fast tier checks the recipe the README starts from; the full tier (`slow`, about a minute each) every other
@pytest.mark.parametrize("recipes", [
    pytest.param(group, id=" + ".join(group), marks=[] if FAST_TIER_RECIPE in group else [pytest.mark.slow])
    for group in GROUPS.values()])
def test_what_each_stage_builds_is_what_its_plan_says(recipes, smoke_work_dir, smoke_model, tmp_path):
    data = yaml.safe_load((ROOT / recipes[0]).read_text())
    smoke_model(smoke_model_id(data))
    recipe = load_recipe(prepare_smoke(data, smoke_work_dir, run_dir=tmp_path / "run"))
    pipeline = Pipeline(recipe, echo=lambda _: None)
    pipeline.preflight()
    printed = " ".join(" ".join(pipeline.plan_lines()).split())  # the dry run's plan, its wrapped lines joined
    for plan in recipe.stages:
        if plan.model_args is not None:
            check_trainer(plan, pipeline)
            continue
        config = STAGE_REGISTRY[plan.name].sampling_config(plan, pipeline)
        assert resolve_backend(config.backend, config.base_url, config.model_name_or_path,
                               config.load_in_4bit) == plan.generation
        assert (config.load_in_4bit, config.seed) == (plan.load_in_4bit, plan.seed)
        assert (config.batch_size, config.max_new_tokens) == (plan.generation_batch, plan.config.max_new_tokens)
        assert f"generates with {plan.generation} ({plan.generation_why})" in printed  # the dry run says what runs
        assert f"{plan.generation_batch} prompts per generate call ({plan.generation_batch_why})" in printed
    # the sampler's 4-bit follows its own section (the shipped recipes sample from a bf16 base beside QLoRA stages)
    sampling = recipe.stage("rejection_sampling")
    if sampling is not None:
        assert sampling.load_in_4bit == data["rejection_sampling"].get("load_in_4bit", recipe.model.load_in_4bit)
    if recipe.evaluation is not None:  # a QLoRA stage's adapter is evaluated on its 4-bit base, as it trained
        for plan in recipe.stages:
            if plan.model_args is not None:
                assert plan.evaluation_4bit == bool(plan.model_args.use_peft and plan.model_args.load_in_4bit)


def test_rejection_sampling_runs_at_the_batch_its_plan_sized_for_the_card(tmp_path):
    """The sampler's prompts per generate call are decided once, for the card planned for (`--card`), from the memory
    model at the section's lengths; the plan prints that batch and the run's sampler config carries it. A longer
    `max_new_tokens` fits fewer prompts."""
    def planned(max_new_tokens: int) -> tuple[int, int, str]:
        recipe = load_recipe({
            "run_dir": str(tmp_path / "run"), "model": {"model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct"},
            "training": {"use_cpu": True, "report_to": "none"},
            "rl": {"dataset_name": "trl_r1.toy.arithmetic:arithmetic_dataset", "rewards": ["math"]},
            "rejection_sampling": {"backend": "transformers", "batch_size": 2, "num_samples": 4,
                                   "max_new_tokens": max_new_tokens}}, check_hardware=False)
        pipeline = Pipeline(recipe, echo=lambda _: None, card=("NVIDIA H100", 80.0), elsewhere=True, dry_run=True)
        pipeline.preflight()
        plan = recipe.stage("rejection_sampling")
        config = STAGE_REGISTRY[plan.name].sampling_config(plan, pipeline)
        printed = " ".join(" ".join(pipeline.plan_lines()).split())
        assert f"{plan.generation_batch} prompts per generate call ({plan.generation_batch_why})" in printed
        return plan.generation_batch, config.batch_size, plan.generation_batch_why

    short, long = planned(1024), planned(8192)
    assert short[0] == short[1] and long[0] == long[1]  # the run samples at the planned batch
    assert short[0] > long[0] > 2  # sized by the memory model for the H100 and the lengths, not the configured 2
    assert "1024 tokens fit in" in short[2] and "NVIDIA H100" in short[2]


def long_prompts(count: int, words: int):
    from trl_r1.toy.arithmetic import arithmetic_dataset

    rows = arithmetic_dataset("test", num_rows=count).to_list()
    return datasets.Dataset.from_list([{**row, "prompt": [{"role": "user", "content": "Think. " * words
                                                          + row["prompt"][-1]["content"]}]} for row in rows])


def evaluation_plan(words: int, card=("NVIDIA L4", 24.0)) -> Pipeline:
    """A dry run's plan of a recipe whose held-out prompts carry `words` extra words, for `card` (elsewhere)."""
    from tests.conftest import recipe

    long_prompts(4, words).to_json("held_out.jsonl")
    data = recipe(rl=None, rejection_sampling={"dataset_name": "held_out.jsonl",
                                                                 "backend": "transformers", "max_new_tokens": 8},
                  evaluation={"dataset_name": "held_out.jsonl", "dataset_split": "train", "backend": "transformers", "batch_size": 2,
                              "stages": ["base"]})
    pipeline = Pipeline(load_recipe(data, check_hardware=False), echo=lambda _: None, card=card, elsewhere=True,
                        dry_run=True)
    pipeline.preflight()
    return pipeline


def test_the_evaluation_runs_at_the_batch_its_plan_decided(workdir, caplog):
    """Issue 34: the held-out evaluation's prompts per generate call are decided once on the plan (for the card
    planned for), printed on its `decided:` line, and the evaluation the run starts generates at that batch."""
    import logging

    from trl_r1.pipeline.fingerprint import ModelHandle

    pipeline = evaluation_plan(words=2)
    batch, why = pipeline.recipe.evaluation_batch
    assert batch > 2 and "NVIDIA L4" in why  # sized by the memory model for the card, not the configured 2
    printed = " ".join(" ".join(pipeline.plan_lines()).split())
    evaluation = printed[printed.index(" evaluation: "):]
    assert f"decided: generates with transformers" in evaluation
    assert f"{batch} prompts per generate call ({why}); seed 42" in evaluation
    with caplog.at_level(logging.INFO, logger="trl_r1.pipeline"):
        pipeline.evaluation.evaluate("base", ModelHandle(pipeline.base_model_path))
    assert f"evaluation: {batch} prompts per generate call (the run's plan)" in caplog.text


def test_long_prompts_raise_the_planned_generation_memory(workdir):
    """Issue 34: rejection sampling and the evaluation are sized at the data's longest prompt (the scan the rl
    stage's figure already uses), not an assumed 512 tokens: longer prompts raise the memory line's figure and
    lower the batch the plan decides."""
    from trl_r1.pipeline.preflight import PROMPT_TOKENS, planned_peak
    from trl_r1.trainers.memory import model_shape

    figures = {}
    for words in (2, 250):
        pipeline = evaluation_plan(words)
        recipe, shape = pipeline.recipe, model_shape(pipeline.base_model_path)
        sampling = recipe.stage("rejection_sampling")
        figures[words] = (pipeline.longest_prompts["evaluation"],
                          planned_peak(recipe, None, shape, 24.0, pipeline.longest_prompts)[0],
                          planned_peak(recipe, sampling, shape, 24.0, pipeline.longest_prompts)[0],
                          recipe.evaluation_batch[0], sampling.generation_batch)
        assert f"<= {figures[words][0]} + 8 tokens" in sampling.generation_batch_why
    short, long = figures[2], figures[250]
    assert short[0] < PROMPT_TOKENS < long[0]
    assert long[1] > short[1] and long[2] > short[2]  # the evaluation's and the sampler's peaks
    assert long[3] <= short[3] and long[4] <= short[4]
