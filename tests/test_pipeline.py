"""The pipeline for real on the tiny model: all four stages, skipping, resuming, QLoRA adapter hand-off, report."""

import json
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from trl_r1.cli import grpo_main, ppo_main
from trl_r1.pipeline import run_recipe
from trl_r1.pipeline.stages import read_record, write_record

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"
COLD_START = "trl_r1.toy.arithmetic:cold_start_dataset"


def shortened_tiny_recipe(run_dir: Path) -> dict:
    """recipes/tiny/pipeline.yaml shortened to fit CI: the default (smaller) tiny model, two-term problems
    (learnt faster), fewer steps and prompts."""
    data = yaml.safe_load((ROOT / "recipes/tiny/pipeline.yaml").read_text())
    data["run_dir"] = str(run_dir)
    data["model"]["tiny"] = {}
    # a constant rate: 96 steps are far from the main job's convergence, and its cosine decay would leave the
    # format half-learnt (rejection sampling then accepts nothing)
    data["cold_start"].update(dataset_kwargs={"num_rows": 256}, num_train_epochs=3, per_device_train_batch_size=8,
                              lr_scheduler_type="constant")
    data["rl"].update(max_steps=4, save_steps=2, per_device_train_batch_size=16, dataset_kwargs={"num_rows": 64},
                      learning_rate=2e-4)  # 4 steps: the main job's 5e-5 would barely move this smaller model
    data["rejection_sampling"].update(dataset_kwargs={}, max_prompts=None)
    data["final_sft"]["max_steps"] = 4
    # T=0.6: this short cold start is far from converged, and at the main job's T=1.0 most samples are malformed
    data["evaluation"].update(dataset_kwargs={}, num_prompts=10, num_samples=2, temperature=0.6,
                              stages=["cold_start", "rl", "final_sft"])
    return data


def test_tiny_pipeline_end_to_end_then_skips_and_redoes_from_stage(tmp_path):
    lines: list[str] = []
    report = run_recipe(shortened_tiny_recipe(tmp_path / "run"), echo=lines.append)
    run = tmp_path / "run"
    records = {name: read_record(run / name) for name in ("cold_start", "rl", "rejection_sampling", "final_sft")}
    assert all(r.status == "done" for r in records.values())
    # cold start teaches the format: held-out completions are well-formed
    assert records["cold_start"].evaluation["format_reward"] >= 0.8
    # rejection sampling kept verified samples, and the final SFT trained on exactly those
    accepted = records["rejection_sampling"].outputs["num_accepted"]
    assert accepted > 0
    rows = (run / "rejection_sampling" / "sft.jsonl").read_text().splitlines()
    assert len(rows) == accepted and "<answer>" in json.loads(rows[0])["messages"][-1]["content"]
    assert records["final_sft"].metrics["global_step"] == 4
    assert records["rl"].outputs["model_path"] == str(run / "rl")  # full fine-tuning hands the model itself on
    # the report: a row per stage, curves as real PNGs, a summary in the terminal
    assert [row["stage"] for row in report["stages"]] == ["cold_start", "rl", "rejection_sampling", "final_sft"]
    assert set(report["curves"]) == {"rewards", "length", "loss", "evaluation"}
    for name in report["curves"].values():
        assert (run / name).read_bytes().startswith(PNG_MAGIC)
    markdown = (run / "report.md").read_text()
    assert "| rejection_sampling | done |" in markdown and "math_accuracy_reward" in markdown
    assert any("trl-r1 run summary" in line for line in lines)

    stamps = {name: (run / name / "stage.json").stat().st_mtime_ns for name in records}
    lines.clear()
    run_recipe(shortened_tiny_recipe(run), echo=lines.append)
    assert all(f"[{name}] done earlier, skipped" in lines for name in records)
    assert stamps == {name: (run / name / "stage.json").stat().st_mtime_ns for name in records}

    lines.clear()
    run_recipe(shortened_tiny_recipe(run), from_stage="final_sft", echo=lines.append)
    assert "[rejection_sampling] done earlier, skipped" in lines and "[final_sft] running" in lines
    assert (run / "final_sft.previous" / "stage.json").exists()


def cold_start_only(run_dir: Path, **overrides) -> dict:
    section = {"dataset_name": COLD_START, "dataset_kwargs": {"num_rows": 32}, "max_steps": 6, "save_steps": 3,
               "per_device_train_batch_size": 4, "max_length": 64, **overrides}
    return {"run_dir": str(run_dir), "model": {"tiny": {}, "load_in_4bit": False, "use_peft": False,
                                                "dtype": "float32"},
            "training": {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "steps"},
            "cold_start": section}


def test_interrupted_stage_resumes_from_its_last_checkpoint_and_edits_redo_it(tmp_path):
    run_recipe(cold_start_only(tmp_path), echo=lambda _: None)
    stage = tmp_path / "cold_start"
    assert {p.name for p in stage.glob("checkpoint-*")} == {"checkpoint-3", "checkpoint-6"}
    # make it look interrupted after the step-3 checkpoint: status running, later outputs gone
    record = read_record(stage)
    record.status = "running"
    write_record(stage, record)
    for path in (stage / "checkpoint-6").iterdir():
        path.unlink()
    (stage / "checkpoint-6").rmdir()
    lines: list[str] = []
    run_recipe(cold_start_only(tmp_path), echo=lines.append)
    resumed = read_record(stage)
    assert "[cold_start] resuming" in lines
    assert resumed.status == "done" and resumed.metrics["resumed_from"].endswith("checkpoint-3")
    assert resumed.metrics["global_step"] == 6

    run_recipe(cold_start_only(tmp_path, learning_rate=1e-4), echo=lines.append)
    assert read_record(stage).fingerprint != resumed.fingerprint
    assert read_record(tmp_path / "cold_start.previous").fingerprint == resumed.fingerprint


def qlora_recipe(run_dir: Path, handoff: str) -> dict:
    """Cold start then GRPO on the tiny model with the QLoRA defaults (4-bit NF4 + LoRA + 8-bit paged AdamW).

    GRPO's learning rate is 0, so its adapter must come out exactly as it went in: what it went in as shows
    which model the stage started from.
    """
    training = {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "no", "max_steps": 2}
    return {
        "run_dir": str(run_dir), "model": {"tiny": {}, "dtype": "float32", "adapter_handoff": handoff},
        "training": training,
        "cold_start": {"dataset_name": COLD_START, "dataset_kwargs": {"num_rows": 8}, "max_length": 64,
                       "per_device_train_batch_size": 4, "learning_rate": 1e-2},
        "rl": {"dataset_name": ARITHMETIC, "per_device_train_batch_size": 4, "num_generations": 4,
               "max_completion_length": 8, "learning_rate": 0.0},
    }


@pytest.mark.parametrize("handoff", ["merge", "continue"])
def test_qlora_stages_hand_adapters_on(tmp_path, handoff):
    run_recipe(qlora_recipe(tmp_path, handoff), echo=lambda _: None)
    cold, rl = read_record(tmp_path / "cold_start"), read_record(tmp_path / "rl")
    for record in (cold, rl):
        assert record.metrics["loaded_in_4bit"] and 0 < record.metrics["trainable_params"] < 50_000
    cold_adapter = load_file(tmp_path / "cold_start" / "adapter_model.safetensors")
    rl_adapter = load_file(tmp_path / "rl" / "adapter_model.safetensors")
    assert any(t.abs().sum() > 0 for k, t in cold_adapter.items() if "lora_B" in k)  # cold start trained it
    if handoff == "merge":
        # the adapter was merged into a fresh full-precision copy, and GRPO trained a new adapter on top of it
        assert cold.outputs["model_path"] == str(tmp_path / "cold_start" / "merged")
        assert rl.outputs["model_path"] == str(tmp_path / "rl" / "merged")
        assert all(t.abs().sum() == 0 for k, t in rl_adapter.items() if "lora_B" in k)
        merged_cold = load_file(tmp_path / "cold_start" / "merged" / "model.safetensors")
        merged_rl = load_file(tmp_path / "rl" / "merged" / "model.safetensors")
        assert all((merged_cold[k] == merged_rl[k]).all() for k in merged_cold)
    else:
        # GRPO continued the cold-start adapter on the same 4-bit base
        assert rl.outputs == {"model_path": str(tmp_path / "base_model"), "adapter_path": str(tmp_path / "rl")}
        assert rl_adapter.keys() == cold_adapter.keys()
        assert all((rl_adapter[k] == cold_adapter[k]).all() for k in cold_adapter)


@pytest.mark.parametrize("command", [grpo_main, ppo_main], ids=["grpo", "ppo"])
def test_rl_stage_alone_from_a_flat_trl_style_yaml(tmp_path, tiny_model_dir, command):
    flat = {"model_name_or_path": tiny_model_dir, "load_in_4bit": False, "use_peft": False, "dtype": "float32",
            "output_dir": str(tmp_path / "grpo"), "dataset_name": ARITHMETIC, "rewards": ["format", "math"],
            "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
            "use_cpu": True, "report_to": "none", "save_strategy": "no", "disable_tqdm": True}
    config = tmp_path / "grpo.yaml"
    config.write_text(yaml.safe_dump(flat))
    assert command(["--config", str(config), "--max_steps", "1"]) == 0
    record = read_record(tmp_path / "grpo")
    assert record.status == "done" and record.metrics["global_step"] == 1
    assert (tmp_path / "grpo" / "model.safetensors").exists() and (tmp_path / "grpo" / "report.md").exists()


def test_a_changed_tiny_model_is_rebuilt_not_reused(tmp_path):
    """The run directory's base model follows `model.tiny`: the same settings reuse it, other settings rebuild it
    (the stages are then stale as well, since their fingerprints chain the model section)."""
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.runner import Pipeline

    def base_config(tiny: dict) -> dict:
        data = cold_start_only(tmp_path)
        data["model"]["tiny"] = tiny
        pipeline = Pipeline(load_recipe(data), echo=lambda _: None)
        pipeline._build_tiny_model()
        return json.loads((tmp_path / "base_model" / "config.json").read_text())

    first = base_config({"hidden_size": 32})
    weights = (tmp_path / "base_model" / "model.safetensors").stat().st_mtime_ns
    assert base_config({"hidden_size": 32}) == first  # same settings: reused as built
    assert (tmp_path / "base_model" / "model.safetensors").stat().st_mtime_ns == weights
    assert first["hidden_size"] == 32 and base_config({"hidden_size": 48})["hidden_size"] == 48


def test_from_stage_must_name_a_stage_of_the_recipe(tmp_path, capsys):
    from trl_r1.cli import main

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(cold_start_only(tmp_path / "run")))
    assert main(["run", str(recipe), "--from-stage", "final_sft", "--dry-run"]) == 2
    assert "--from-stage 'final_sft' is not a stage of this recipe; stages: ['cold_start']" in capsys.readouterr().err


def test_a_real_run_stops_at_the_preflight_before_any_stage(tmp_path, capsys):
    """The preflight a dry run shows is the one a run makes: a misspelt column key stops it before training."""
    data = shortened_tiny_recipe(tmp_path / "run")
    data["evaluation"]["solution_column"] = "answr"
    from trl_r1.pipeline import RecipeError

    with pytest.raises(RecipeError) as info:
        run_recipe(data)
    assert info.value.problems == ["evaluation: key 'solution_column': the dataset has no 'answr' column (columns: "
                                   "['prompt', 'solution'])"]
    assert not (tmp_path / "run" / "cold_start").exists()  # no stage started


def test_held_out_metrics_leave_out_samples_a_reward_does_not_apply_to():
    """A math reward on rows without gold (or a code reward without a sandbox) says None: not a wrong answer."""
    from trl_r1.pipeline.evaluate import summarize_scores

    mixed = summarize_scores("math_accuracy_reward", [1.0, 1.0, None, None, 0.0, 1.0], k=2)
    assert mixed["math_accuracy_reward"] == 0.75 and mixed["math_accuracy_reward/skipped"] == pytest.approx(1 / 3)
    assert mixed["math_accuracy_reward/pass@2"] == 1.0  # over the two prompts it scored
    assert summarize_scores("code_reward", [None] * 4, k=2) == {"code_reward/skipped": 1.0}  # no mean of nothing


def test_the_cached_base_evaluation_follows_the_rewards_it_was_scored_with(tmp_path, monkeypatch):
    """Without `evaluation.rewards` the held-out rewards are the RL stage's: editing those re-evaluates the base."""
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.evaluate import HeldOutEvaluation
    from trl_r1.pipeline.runner import Pipeline

    monkeypatch.setattr(HeldOutEvaluation, "evaluate", lambda self, stage, handle: {"rewards": repr(self.rewards())})

    def base_scores(rewards: list) -> dict:
        data = {"run_dir": str(tmp_path), "model": {"model_name_or_path": "some/model"},
                "training": {"use_cpu": True, "report_to": "none"},
                "rl": {"dataset_name": ARITHMETIC, "rewards": rewards},
                "evaluation": {"dataset_name": ARITHMETIC, "stages": ["base", "rl"]}}
        return Pipeline(load_recipe(data), echo=lambda _: None).evaluation.base()

    assert "'math'" not in base_scores(["format"])["rewards"]
    assert "'math'" in base_scores(["format", "math"])["rewards"]  # not the cached format-only scores


def test_a_stage_adapter_is_evaluated_on_the_base_it_was_trained_on(tmp_path, monkeypatch):
    """QLoRA stages are evaluated on the 4-bit base; an `rl` stage that trains on the bf16 base (beside vLLM) on the
    bf16 base, not on the recipe-wide 4-bit one."""
    import trl_r1.pipeline.evaluate as evaluate
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.runner import Pipeline
    from trl_r1.pipeline.stages import StageRecord

    loaded = {}
    monkeypatch.setattr(evaluate, "evaluate_model", lambda *a, load_in_4bit, **k: loaded.setdefault(a[0], load_in_4bit))
    data = {"run_dir": str(tmp_path), "model": {"model_name_or_path": "some/model"},
            "training": {"use_cpu": True, "report_to": "none"},
            "cold_start": {"dataset_name": ARITHMETIC},
            "rl": {"dataset_name": ARITHMETIC, "rewards": ["math"], "load_in_4bit": False},
            "evaluation": {"dataset_name": ARITHMETIC, "stages": ["cold_start", "rl"]}}
    recipe = load_recipe(data)
    pipeline = Pipeline(recipe, echo=lambda _: None)
    for stage in ("cold_start", "rl"):  # the stage's plan says how its adapter's base loads
        pipeline.evaluation.score(recipe.stage(stage), StageRecord(stage, "", outputs={
            "model_path": stage, "adapter_path": f"{stage}/adapter"}))
    assert loaded == {"cold_start": True, "rl": False}
    assert [recipe.stage(s).evaluation_4bit for s in ("cold_start", "rl")] == [True, False]


class GeneratorLoaded(Exception):
    """Raised by the stand-in `load_generator`: what would generate has been recorded, nothing more is needed."""


def test_a_merged_lora_stage_generates_from_its_adapter_on_its_base(tmp_path, tiny_model_dir, monkeypatch):
    """`adapter_handoff: merge`: the next training stage starts from the merged copy, but the stage's held-out
    evaluation and rejection sampling from it load its adapter on the base it trained on (served per request by
    the generation layer), never the merged folder."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    import trl_r1.data.generation as generation
    import trl_r1.data.rejection_sampling as rejection_sampling
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.runner import Pipeline
    from trl_r1.pipeline.stages import STAGE_REGISTRY, ModelHandle, TrainingResult

    loaded = []

    def load_generator(backend, model_name_or_path, *, adapter_path=None, **kwargs):
        loaded.append((model_name_or_path, adapter_path))
        raise GeneratorLoaded

    monkeypatch.setattr(generation, "load_generator", load_generator)
    monkeypatch.setattr(rejection_sampling, "load_generator", load_generator)
    data = {"run_dir": str(tmp_path), "model": {"model_name_or_path": tiny_model_dir, "dtype": "float32"},
            "training": {"use_cpu": True, "report_to": "none"},
            "rl": {"dataset_name": ARITHMETIC, "rewards": ["math"]},
            "rejection_sampling": {"dataset_kwargs": {"num_rows": 4}},
            "evaluation": {"dataset_name": ARITHMETIC, "stages": ["rl"]}}
    recipe = load_recipe(data)
    assert recipe.model.adapter_handoff == "merge" and recipe.model.use_peft
    rl_plan = recipe.stage("rl")
    lora = LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM", init_lora_weights=False)
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir), lora).save_pretrained(rl_plan.output_dir)
    trained = TrainingResult(ModelHandle(tiny_model_dir), {}, 0.0)

    record = STAGE_REGISTRY["rl"].record(rl_plan, Pipeline(recipe, echo=lambda _: None), trained)
    assert record.handle == ModelHandle(str(rl_plan.output_dir / "merged"))  # the next training stage's start
    assert (rl_plan.output_dir / "merged" / "model.safetensors").is_file()
    with pytest.raises(GeneratorLoaded):  # the stage's held-out evaluation
        Pipeline(recipe, echo=lambda _: None)._finish(STAGE_REGISTRY["rl"], rl_plan, trained)
    write_record(rl_plan.output_dir, record)
    with pytest.raises(GeneratorLoaded):  # rl is done: rejection sampling from it
        run_recipe(data, echo=lambda _: None)
    assert loaded == [(tiny_model_dir, str(rl_plan.output_dir))] * 2


def test_the_rl_stage_frees_its_vllm_engine_when_training_raises(tmp_path, monkeypatch):
    """Issue 34: the engine TRL started with the trainer is shut down in a `finally`, not only after a good save."""
    from types import SimpleNamespace

    import trl_r1.data.generation as generation
    from trl_r1.trainers import R1GRPOTrainer

    engine, shut = object(), []

    def train_with_engine_then_raise(self, **kwargs):
        self.vllm_generation = SimpleNamespace(llm=engine)  # what TRL's colocate mode holds once its engine started
        raise RuntimeError("out of memory in the first step")

    monkeypatch.setattr(R1GRPOTrainer, "train", train_with_engine_then_raise)
    monkeypatch.setattr(generation, "shutdown_vllm_engine", shut.append)
    recipe = cold_start_only(tmp_path / "run")
    recipe["rl"] = recipe.pop("cold_start") | {
        "dataset_name": ARITHMETIC, "num_generations": 4, "max_completion_length": 8, "rewards": ["format", "math"]}
    recipe["rl"].pop("max_length")
    with pytest.raises(Exception, match="out of memory in the first step"):
        run_recipe(recipe)
    assert shut == [engine]
