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
    with pytest.raises(HubPublishError, match=r"pushing to me/toy-r1 failed .*Offline.*is intact"):
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
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: calls.setdefault("repo", (repo_id, kw)))
    monkeypatch.setattr(HfApi, "upload_folder", lambda self, **kw: calls.setdefault("upload", kw) and "url")
    push_to_hub(built.output_dir, "me/toy-r1", private=True)
    assert calls["repo"] == ("me/toy-r1", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert calls["upload"]["folder_path"] == Path(built.output_dir) / "hub"
    assert calls["upload"]["repo_type"] == "dataset"
