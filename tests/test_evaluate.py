"""`trl-r1 evaluate`: a model or an adapter on a benchmark, scored and reported as the pipeline's held-out
evaluation (the same function, the same table)."""

import json

import pytest
from datasets import Dataset

from trl_r1.cli import main
from trl_r1.pipeline.evaluate import EvaluateArguments, evaluate_model
from trl_r1.toy.toy_reasoner import build_toy_reasoner, toy_prompts

SETTINGS = ["--num_samples", "2", "--max_new_tokens", "24", "--batch_size", "6", "--temperature", "0.6"]


@pytest.fixture(scope="module")
def reasoner(tiny_model_dir, tmp_path_factory):
    return str(build_toy_reasoner(tmp_path_factory.getbasetemp() / "toy-reasoner", tiny_model_dir))


def _same_as_the_pipeline(model, prompts_file, adapter=None):
    config = EvaluateArguments(model_name_or_path=model, dataset_name=str(prompts_file), num_samples=2,
                               max_new_tokens=24, batch_size=6)
    prompts = Dataset.from_json(str(prompts_file))
    return evaluate_model(model, prompts, config, ["format", "math"], adapter_path=adapter)


def test_evaluate_a_model_on_a_local_file(reasoner, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    toy_prompts().to_json(prompts)
    out = tmp_path / "eval"
    argv = ["evaluate", "--model_name_or_path", reasoner, "--dataset_name", str(prompts), "--output_dir", str(out)]
    assert main([*argv, *SETTINGS]) == 0
    report = json.loads((out / "evaluation.json").read_text())
    results = report["evaluation"][reasoner]
    # the pipeline's evaluation, number for number: pass@1 over 2 samples, its interval, pass@2
    assert results == pytest.approx(_same_as_the_pipeline(reasoner, prompts))
    assert results["num_completions"] == 24 and results["math_accuracy_reward"] > 0.3  # it learned 8 of 12
    assert results["math_accuracy_reward/pass@2"] >= results["math_accuracy_reward"]
    table = (out / "report.md").read_text()
    assert "| model | math_accuracy_reward (95% CI) | format_reward (95% CI) | math_accuracy_reward pass@2 |" in table
    assert f"| {reasoner} | {round(results['math_accuracy_reward'], 3):g} [" in table
    assert f"held-out math_accuracy_reward pass@2: {reasoner}=" in capsys.readouterr().out


def test_an_adapter_is_evaluated_on_the_base_its_config_names(reasoner, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(reasoner)
    adapter = tmp_path / "adapter"  # random LoRA weights: the adapter spoils the reasoner's answers
    get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False)).save_pretrained(adapter)
    prompts = tmp_path / "prompts.jsonl"
    toy_prompts().select(range(4)).to_json(prompts)
    argv = ["evaluate", "--model_name_or_path", str(adapter), "--dataset_name", str(prompts),
            "--output_dir", str(tmp_path / "eval"), *SETTINGS]
    assert main(argv) == 0
    report = json.loads((tmp_path / "eval" / "evaluation.json").read_text())
    assert report["settings"]["base_model"] == reasoner
    with_adapter = _same_as_the_pipeline(reasoner, prompts, adapter=str(adapter))
    assert report["evaluation"][str(adapter)] == pytest.approx(with_adapter)
    alone = _same_as_the_pipeline(reasoner, prompts)
    assert with_adapter["math_accuracy_reward"] < alone["math_accuracy_reward"]


def test_a_benchmark_sets_its_dataset_and_columns(tiny_model_dir, tmp_path, monkeypatch):
    """MATH-500 by name: its `problem` column is the prompt and its `answer` (not the worked `solution`) the gold."""
    from trl_r1.rehearsal.fixtures import DATA_DIR_ENV, write_mirrors

    monkeypatch.setenv(DATA_DIR_ENV, str(write_mirrors(tmp_path / "mirrors", ["HuggingFaceH4/MATH-500"], rows=8)))
    args = EvaluateArguments(model_name_or_path=tiny_model_dir, benchmark="math500", num_prompts=3)
    assert (args.dataset_name, args.dataset_split, args.prompt_column, args.solution_column) == \
        ("HuggingFaceH4/MATH-500", "test", "problem", "answer")
    assert EvaluateArguments(model_name_or_path="m", benchmark="aime24", solution_column="solution").solution_column \
        == "solution"  # a key given with the benchmark wins
    argv = ["evaluate", "--model_name_or_path", tiny_model_dir, "--benchmark", "math500", "--num_prompts", "3",
            "--output_dir", str(tmp_path / "eval"), *SETTINGS]
    assert main(argv) == 0
    report = json.loads((tmp_path / "eval" / "evaluation.json").read_text())
    assert report["evaluation"][tiny_model_dir]["num_completions"] == 6
    assert report["evaluation"][tiny_model_dir]["math_accuracy_reward/skipped"] == 0  # every row had its gold


def test_evaluate_settings_that_cannot_work_exit_2(tmp_path, capsys):
    assert main(["evaluate", "--dataset_name", "x.jsonl"]) == 2
    assert "model_name_or_path: required" in capsys.readouterr().err
    assert main(["evaluate", "--model_name_or_path", "m"]) == 2
    assert "set benchmark (math500, aime24) or dataset_name" in capsys.readouterr().err
    assert main(["evaluate", "--model_name_or_path", "m", "--benchmark", "math5000"]) == 2
    assert "benchmark: expected one of ['math500', 'aime24']" in capsys.readouterr().err


def test_an_evaluation_keeps_per_prompt_scores_and_the_first_prompts_samples(reasoner, tmp_path):
    """What the report's paired gains and its before/after samples are made of: each reward's per-prompt mean in
    prompt order (so two evaluations pair up), and the first completion of the first prompts with its rewards."""
    from trl_r1.pipeline.evaluate import SAMPLES_SHOWN

    prompts = tmp_path / "prompts.jsonl"
    toy_prompts().to_json(prompts)
    results = _same_as_the_pipeline(reasoner, prompts)
    rows = Dataset.from_json(str(prompts))
    per_prompt = results["math_accuracy_reward/per_prompt"]
    assert len(per_prompt) == rows.num_rows == 12
    assert sum(per_prompt) / len(per_prompt) == pytest.approx(results["math_accuracy_reward"])
    samples = results["samples"]
    assert [s["prompt"] for s in samples] == [rows[i]["prompt"][-1]["content"] for i in range(SAMPLES_SHOWN)]
    for i, sample in enumerate(samples):
        assert sample["completion"] and set(sample["rewards"]) == {"format_reward", "math_accuracy_reward"}
        # the sample's own score, as the reward gives it, and counted in its prompt's mean
        assert sample["rewards"]["math_accuracy_reward"] in (0.0, 1.0)
        assert per_prompt[i] in ({0.0, 0.5} if sample["rewards"]["math_accuracy_reward"] == 0.0 else {0.5, 1.0})
