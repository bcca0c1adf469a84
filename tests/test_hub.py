"""Dataset card content, the local export (exactly the files a push uploads) and a push that cannot succeed."""

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from datasets import load_dataset

from trl_r1.data import (
    HubPublishError,
    RejectionSamplingConfig,
    build_dataset_card,
    export_for_hub,
    push_to_hub,
    rejection_sample,
)
from trl_r1.toy.toy_reasoner import toy_prompts


@pytest.fixture(scope="module")
def built(toy_reasoner, tmp_path_factory):
    config = RejectionSamplingConfig(model_name_or_path=toy_reasoner, output_dir=str(tmp_path_factory.mktemp("rs")),
                                     num_samples=4, max_new_tokens=32, max_per_prompt=2, target_lang="en")
    return rejection_sample(config, toy_prompts().select(range(6)))


def _card(text):
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_dataset_card_metadata_and_content(built):
    metadata, body = _card(build_dataset_card(built.output_dir, repo_id="me/toy-r1", license="mit"))
    assert metadata["license"] == "mit" and metadata["task_categories"] == ["text-generation"]
    assert {"trl-r1", "reasoning", "rejection-sampling"} <= set(metadata["tags"])
    assert metadata["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in metadata["configs"]] == ["default", "prompt_stats"]
    stats, run = built.stats, json.loads((Path(built.output_dir) / "run.json").read_text())
    assert f"`{run['model']['model']}` (transformers backend)" in body
    assert f"{stats['generated']} generated, **{stats['accepted']} kept**" in body
    for name, value in run["generation"].items():
        assert f"| `{name}` | {value} |" in body
    for name, count in stats["rejections"].items():  # every filter with its rejection count
        assert f"| {name} | " in body and body.split(f"| {name} | ")[1].split("\n")[0].endswith(f"| {count} |")
    assert "`min_language_consistency=0.95`" in body and "`max_per_prompt=2`" in body
    assert 'load_dataset("me/toy-r1", split="train")' in body and '"prompt_stats"' in body


def test_export_writes_the_upload(built, tmp_path):
    export = export_for_hub(built.output_dir, tmp_path / "export", repo_id="me/toy-r1")
    files = sorted(str(p.relative_to(export)) for p in export.rglob("*") if p.is_file())
    assert files == ["README.md", "data/train-00000-of-00001.parquet", "prompt_stats/train-00000-of-00001.parquet"]
    # loading the folder the way the Hub would (the card's `configs`) gives back the built data
    sft = load_dataset(str(export), split="train", cache_dir=str(tmp_path / "cache"))
    assert sft.to_list() == built.dataset.to_list()
    stats = load_dataset(str(export), "prompt_stats", split="train", cache_dir=str(tmp_path / "cache"))
    assert list(stats["pass_rate"]) == list(built.prompt_stats["pass_rate"])


def _digest(folder):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).glob("*.json*"))}


def test_push_without_network_fails_clearly_and_keeps_the_data(built, monkeypatch):
    before = _digest(built.output_dir)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")  # the tests run with HF_HUB_OFFLINE=1
    with pytest.raises(HubPublishError, match=r"the Hub is switched off here \(HF_HUB_OFFLINE=1\).*is intact"):
        push_to_hub(built.output_dir, "me/toy-r1")
    assert _digest(built.output_dir) == before
    assert (Path(built.output_dir) / "hub" / "README.md").exists()


def test_push_without_token_fails_before_any_request(built, monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(HubPublishError, match="no Hugging Face token"):
        push_to_hub(built.output_dir, "me/toy-r1")


def test_push_uploads_the_exported_folder(built, monkeypatch):
    from huggingface_hub import HfApi

    calls = {}
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)  # the Hub itself is HfApi's stand-in
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: calls.setdefault("repo", (repo_id, kw)))
    monkeypatch.setattr(HfApi, "upload_folder", lambda self, **kw: calls.setdefault("upload", kw) and "url")
    push_to_hub(built.output_dir, "me/toy-r1", private=True)
    assert calls["repo"] == ("me/toy-r1", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert calls["upload"]["folder_path"] == Path(built.output_dir) / "hub"
    assert calls["upload"]["repo_type"] == "dataset"


# --------------------------------------------------------------------------------------------- model publishing

RECIPE = {"model": {"tiny": {}, "load_in_4bit": False, "use_peft": True, "lora_r": 4, "dtype": "float32"},
          "training": {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "no"},
          "cold_start": {"dataset_name": "trl_r1.toy.arithmetic:cold_start_dataset", "dataset_kwargs": {"num_rows": 8},
                         "max_steps": 2, "per_device_train_batch_size": 4, "max_length": 64},
          "evaluation": {"dataset_name": "trl_r1.toy.arithmetic:arithmetic_dataset", "num_prompts": 4,
                         "num_samples": 2, "max_new_tokens": 8, "stages": ["base", "cold_start"]}}


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A finished one-stage run (LoRA cold start, merged) with held-out figures, and its recipe file."""
    from trl_r1.pipeline import run_recipe

    run_dir = tmp_path_factory.mktemp("published-run")
    recipe = run_dir / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"run_dir": str(run_dir / "run"), **RECIPE}, sort_keys=False))
    run_recipe(str(recipe), echo=lambda _: None)
    return recipe, run_dir / "run"


def _publish(*argv):
    from trl_r1.cli import main

    return main(["publish", *map(str, argv)])


def test_model_export_holds_the_merged_model_and_a_card_with_recipe_stages_and_figures(trained_run, capsys):
    from safetensors.torch import load_file

    recipe, run = trained_run
    assert _publish(recipe, "--repo-id", "me/tiny-r1", "--export-only") == 0
    export = run / "hub"
    files = sorted(p.name for p in export.iterdir())
    assert {"README.md", "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(files)
    assert not any(name.startswith("adapter") for name in files)  # the merged model, not the adapter
    merged, published = load_file(run / "cold_start" / "merged" / "model.safetensors"), load_file(
        export / "model.safetensors")
    assert merged.keys() == published.keys() and all((merged[k] == published[k]).all() for k in merged)
    metadata, body = _card((export / "README.md").read_text())
    assert metadata["library_name"] == "transformers" and {"trl-r1", "sft"} <= set(metadata["tags"])
    assert "base_model" not in metadata  # the tiny model is built locally: no Hub base to claim
    assert "| cold_start | sft | `trl_r1.toy.arithmetic:cold_start_dataset` | 2 |" in body
    report = json.loads((run / "report.json").read_text())
    accuracy = report["evaluation"]["cold_start"]["math_accuracy_reward"]
    assert "| after | math_accuracy_reward (95% CI) |" in body and f"| cold_start | {round(accuracy, 3):g} [" in body
    assert recipe.read_text().strip() in body  # the recipe itself
    assert 'pipeline("text-generation", model="me/tiny-r1")' in body


def test_an_adapter_on_a_local_base_is_not_pushed_claiming_that_path(trained_run, capsys):
    recipe, run = trained_run
    assert _publish(recipe, "--repo-id", "me/tiny-r1", "--adapter", "--export-only") == 2
    err = capsys.readouterr().err
    assert "trained on the local folder" in err and str(run / "base_model") in err and "--base-model" in err
    assert _publish(recipe, "--repo-id", "me/tiny-r1", "--adapter", "--base-model", "me/tiny-base",
                    "--export-only") == 0
    export = run / "hub"
    assert json.loads((export / "adapter_config.json").read_text())["base_model_name_or_path"] == "me/tiny-base"
    metadata, body = _card((export / "README.md").read_text())
    assert metadata["library_name"] == "peft" and metadata["base_model"] == "me/tiny-base"
    assert "AutoPeftModelForCausalLM.from_pretrained(\"me/tiny-r1\")" in body


def test_model_push_without_network_fails_clearly(trained_run, monkeypatch, capsys):
    recipe, run = trained_run
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")  # the tests run with HF_HUB_OFFLINE=1
    assert _publish(recipe, "--repo-id", "me/tiny-r1") == 1
    assert "the Hub is switched off here (HF_HUB_OFFLINE=1)" in capsys.readouterr().err
    assert (run / "cold_start" / "merged" / "model.safetensors").exists()


def test_a_stage_push_to_hub_of_an_adapter_on_a_local_base_is_refused(tmp_path):
    """TRL's push_to_hub in a stage would push the LoRA adapter with its base recorded as a local folder."""
    from trl_r1.pipeline import RecipeError, load_recipe

    recipe = {"run_dir": str(tmp_path), **RECIPE, "cold_start": {**RECIPE["cold_start"], "push_to_hub": True}}
    with pytest.raises(RecipeError, match=r"cold_start: push_to_hub would push a LoRA adapter whose base is the "
                                          r"tiny model .*trl-r1 publish"):
        load_recipe(recipe)
    hub_base = {**recipe, "model": {**RECIPE["model"], "tiny": None, "model_name_or_path": "Qwen/Qwen2.5-0.5B"}}
    load_recipe(hub_base)  # the first stage's adapter sits on the Hub model: TRL's push is right there
    rl = {"dataset_name": "trl_r1.toy.arithmetic:arithmetic_dataset", "push_to_hub": True}
    with pytest.raises(RecipeError, match="rl: push_to_hub would push a LoRA adapter whose base is cold_start's "
                                          "merged model"):
        load_recipe({**hub_base, "cold_start": RECIPE["cold_start"], "rl": rl})
