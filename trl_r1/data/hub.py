"""Publishing a built dataset: a generated dataset card and `push_to_hub` (its upload, `upload_folder`, also
pushes models: `trl_r1.pipeline.publish`).

`export_for_hub(output_dir)` writes exactly the files an upload would send into `output_dir/hub/`: `README.md`
(the card: YAML metadata with license, task categories, `trl-r1` tags, size; the source model or teacher, the
generation parameters, each filter and how many samples it rejected, and how to load the data),
`data/train-*.parquet` (the SFT rows) and `prompt_stats/train-*.parquet` (per-prompt pass rates, as a second
config). `push_to_hub` uploads that folder; without a token or network it raises `HubPublishError` and leaves
the built dataset untouched.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..config import counted
from .layout import PROMPT_STATS, RUN, SFT, STATS

_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
          (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]
_FILTER_HELP = {
    "malformed": ("think block + answer", "no reasoning block, or nothing after it (e.g. truncated)"),
    "mixed_language": ("min_language_consistency", "share of target-language words in the reasoning too low"),
    "long_paragraph": ("max_paragraph_chars", "a reasoning paragraph longer than the limit"),
    "code_in_reasoning": ("reject_code_in_reasoning", "a fenced code block in the reasoning of a non-code task"),
    "near_duplicate": ("dedup_threshold", "too similar to a sample already kept for the prompt"),
    "max_per_prompt": ("max_per_prompt", "over the number of samples kept per prompt"),
}


# a model family (matched in the model's name, lower case) -> the license its Hub card declares, which data
# generated from it and models trained from it carry; any other model is apache-2.0 unless its own README says
MODEL_LICENSES: list[tuple[str, str]] = [
    ("llama-3.2", "llama3.2"), ("llama-3.1", "llama3.1"), ("llama-3.3", "llama3.3"), ("llama-3-", "llama3"),
    ("qwen2.5-3b", "qwen-research"), ("qwen2.5-72b", "qwen"), ("deepseek-r1", "mit"),
]
DEFAULT_LICENSE = "apache-2.0"


class HubPublishError(RuntimeError):
    """The push failed (no token, no network, refused); the local files and their export are intact."""


def push_problem(token: str | None = None) -> str | None:
    """Why a push cannot start on this machine (offline mode, no token), or None. The one check of every push
    (`upload_folder`), also made before a builder generates, so that hours of generation never end in it."""
    from huggingface_hub import constants, get_token

    if token is None and get_token() is None:
        return "no Hugging Face token (run `hf auth login` or set HF_TOKEN)"
    if constants.HF_HUB_OFFLINE:
        return "the Hub is switched off here (HF_HUB_OFFLINE=1)"
    return None


def model_license(model_name_or_path: str, adapter_path: str | None = None) -> str:
    """The license a model's derivatives carry: the `license:` of a local model's README.md, else the family's
    (`MODEL_LICENSES`) matched in its name, its adapter's base or its config's `_name_or_path`, else apache-2.0.

    >>> model_license("meta-llama/Llama-3.2-1B-Instruct"), model_license("Qwen/Qwen2.5-3B-Instruct")
    ('llama3.2', 'qwen-research')
    >>> model_license("Qwen/Qwen2.5-1.5B-Instruct")
    'apache-2.0'
    """
    import yaml

    names = [model_name_or_path]
    for folder, key, file in ((adapter_path, "base_model_name_or_path", "adapter_config.json"),
                              (model_name_or_path, "_name_or_path", "config.json")):
        path = Path(folder) / file if folder else None
        if path is not None and path.is_file():
            names.append(str(json.loads(path.read_text()).get(key) or ""))
    readme = Path(model_name_or_path) / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8", errors="replace")
        if text.startswith("---"):
            try:
                metadata = yaml.safe_load(text.split("---")[1]) or {}
            except yaml.YAMLError:
                metadata = {}
            if isinstance(metadata, dict) and isinstance(metadata.get("license"), str):
                return metadata["license"]
    for name in names:
        for family, license in MODEL_LICENSES:
            if family in name.lower():
                return license
    return DEFAULT_LICENSE


def size_category(n: int) -> str:
    """The Hub's size bucket for n rows.

    >>> size_category(999), size_category(25_000)
    ('n<1K', '10K<n<100K')
    """
    return next((name for limit, name in _SIZES if n < limit), "n>100M")


def build_dataset_card(output_dir: str | Path, repo_id: str | None = None, license: str | None = None) -> str:
    """The dataset card (README.md text) of a build in `output_dir`, from its run.json and stats.json; its license
    is `license`, else the source model's (`model_license`)."""
    from huggingface_hub import DatasetCardData

    out = Path(output_dir)
    run = json.loads((out / RUN).read_text())
    stats = json.loads((out / STATS).read_text())
    kind, config, model = run["kind"], run["config"], run["model"]
    license = license or model_license(model["model"], model.get("adapter"))
    title = "Rejection-sampled reasoning SFT data" if kind == "rejection_sampling" else "Distilled reasoning SFT data"
    metadata = DatasetCardData(
        license=license, task_categories=["text-generation"], size_categories=[size_category(stats["accepted"])],
        tags=["trl-r1", "trl", "reasoning", "synthetic", "sft", kind.replace("_", "-")], pretty_name=title,
        configs=[{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]},
                 {"config_name": "prompt_stats", "data_files": [{"split": "train", "path": "prompt_stats/train-*"}]}],
    )
    source = "Teacher" if kind == "distillation" else "Sampled from"
    where = f" served at `{config['base_url']}`" if model["backend"] == "openai" else f" ({model['backend']} backend)"
    adapter = f" + adapter `{model['adapter']}`" if model.get("adapter") else ""
    generation = "\n".join(f"| `{k}` | {v} |" for k, v in run["generation"].items())
    rewards = ", ".join(f"`{r}`" for r in config["rewards"]) or "no reward (readability filters only)"
    filter_rows = []
    for name, count in stats["rejections"].items():
        setting, meaning = _FILTER_HELP.get(name, (f"rewards, min_reward={config['min_reward']}",
                                                   _reward_rejection_meaning(name)))
        value = f"`{setting}={config[setting]}`" if setting in config else setting
        filter_rows.append(f"| {name} | {value} | {meaning} | {count} |")
    load_name = repo_id or "path/to/this/folder"
    body = f"""
# {title}

Built with trl-r1 (`trl-r1 {"rejection-sample" if kind == "rejection_sampling" else "distill"}`,
version {run["trl_r1_version"]}), following DeepSeek-R1's recipe: sample reasoning traces, keep only the verified
ones, drop unreadable ones (mixed languages, long paragraphs, code blocks in the reasoning).

- **{source}:** `{model["model"]}`{adapter}{where}
- **Prompts:** {f"`{config['dataset_name']}`" if config.get("dataset_name") else "an in-memory dataset"} (split `{config["dataset_split"]}`,
  column `{config["prompt_column"]}`), {counted(stats["num_prompts"], "prompt")}
- **Samples:** {stats["generated"]} generated, **{stats["accepted"]} kept** (acceptance rate
  {stats["acceptance_rate"]:.1%}); {stats["passed"]} passed verification; {stats["truncated"]} were truncated
- **Verification:** every kept sample scored at least {config["min_reward"]} on each of {rewards}

## Format

TRL's conversational format: `messages` holds the prompt turns and one assistant turn
`<think>reasoning</think>` followed by the answer; the prompt dataset's other columns are kept. The
`prompt_stats` config has every prompt with its `pass_rate` (share of samples that passed verification):
prompts with `0 < pass_rate < 1` are the informative ones for a next round of RL.

## Generation parameters

| parameter | value |
|---|---|
{generation}
| `seed` | {config["seed"]} |

## Filters

Applied in this order; each sample is counted under the first filter that rejected it.

| filter | setting | rejects | rejected |
|---|---|---|---|
{chr(10).join(filter_rows)}

## Load it

```python
from datasets import load_dataset

sft = load_dataset("{load_name}", split="train")
prompts = load_dataset("{load_name}", "prompt_stats", split="train")
rl_prompts = prompts.filter(lambda row: 0 < row["pass_rate"] < 1)

from trl import SFTConfig, SFTTrainer
trainer = SFTTrainer(model="<student>", train_dataset=sft, args=SFTConfig(assistant_only_loss=True))
```
"""
    return f"---\n{metadata.to_yaml()}\n---\n{body}"


def _reward_rejection_meaning(name: str) -> str:
    verdict, _, reward = name.partition(":")
    return f"`{reward}` scored below the threshold" if verdict == "incorrect" else f"`{reward}` could not verify it"


def export_for_hub(output_dir: str | Path, export_dir: str | Path | None = None, repo_id: str | None = None,
                   license: str | None = None) -> Path:
    """Write the files a push would upload (card + parquet shards) to `export_dir` (default `output_dir/hub`)."""
    out = Path(output_dir)
    if not (out / STATS).exists():
        raise FileNotFoundError(f"{out} holds no finished build (no {STATS}); run the builder first")
    target = Path(export_dir) if export_dir is not None else out / "hub"
    if target.exists():
        shutil.rmtree(target)
    (target / "data").mkdir(parents=True)
    (target / "prompt_stats").mkdir()
    _jsonl_to_parquet(out / SFT, target / "data" / "train-00000-of-00001.parquet")
    _jsonl_to_parquet(out / PROMPT_STATS, target / "prompt_stats" / "train-00000-of-00001.parquet")
    (target / "README.md").write_text(build_dataset_card(out, repo_id, license), encoding="utf-8")
    return target


def push_to_hub(output_dir: str | Path, repo_id: str, *, private: bool = False, token: str | None = None,
                license: str | None = None) -> str:
    """Export and upload a build to the Hub dataset `repo_id`; returns the commit URL.

    Raises HubPublishError (naming the cause) without a token, offline, or when the Hub refuses.
    """
    export = export_for_hub(output_dir, repo_id=repo_id, license=license)
    hint = f"the dataset in {output_dir} is intact and the upload is ready in {export}"
    return upload_folder(export, repo_id, repo_type="dataset", private=private, token=token, hint=hint,
                         message="Upload dataset built with trl-r1")


def upload_folder(folder: str | Path, repo_id: str, *, repo_type: str, private: bool = False,
                  token: str | None = None, hint: str = "", message: str = "Upload with trl-r1") -> str:
    """Create the Hub repo `repo_id` (if needed) and upload `folder` to it; returns the commit URL. Datasets and
    models (`trl_r1.pipeline.publish`) go up the same way.

    Raises HubPublishError (naming the cause, then `hint`) without a token, offline, or when the Hub refuses.
    """
    from huggingface_hub import HfApi

    problem = push_problem(token)
    if problem:
        raise HubPublishError(f"{problem}; {hint}")
    try:
        api = HfApi(token=token)
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo_id, folder_path=folder, repo_type=repo_type,
                                   commit_message=message)
    except Exception as exc:  # offline mode, network, auth, permissions: all leave the local files as they were
        raise HubPublishError(f"pushing to {repo_id} failed ({type(exc).__name__}: {exc}); {hint}") from exc
    return str(commit.commit_url) if hasattr(commit, "commit_url") else str(commit)


def _jsonl_to_parquet(source: Path, target: Path) -> None:
    import datasets

    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    table = datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict({"messages": []})
    table.to_parquet(str(target))
