"""Publishing a run's model to the Hub: the weights and a model card stating the recipe, the stages and the
held-out figures (`trl-r1 publish RECIPE --repo-id me/model`).

What is published is the last stage of the recipe that trained a model (or `--stage`):

* by default the full model: the stage's `merged` folder (LoRA merged into its base, the `merge` hand-off), its
  own folder for full fine-tuning, or, with the `continue` hand-off, its adapter merged here into the base;
* with `--adapter`, the LoRA adapter alone, which loads on its base by the name in `adapter_config.json`. A base
  that is a local folder (after a `merge` hand-off every later stage's base is the previous stage's merged model,
  e.g. `<run_dir>/rl/merged`; with `model.tiny` the built base) cannot be resolved by anyone who downloads the
  adapter, so it is refused unless `--base-model` names the Hub id of those same weights.

`export_model_for_hub` writes exactly the files a push uploads into `<run_dir>/hub/` (or `--export-dir`), so
they can be checked offline; the push (`trl_r1.cli.publish_main`) is `trl_r1.data.hub.upload_folder`, the
dataset push's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .recipe import Recipe
from .report import REPORT_JSON, evaluation_table
from .fingerprint import read_record

MODEL_FILES = ("config.json", "generation_config.json", "*.safetensors", "model.safetensors.index.json",
               "tokenizer*", "special_tokens_map.json", "vocab*", "merges.txt", "added_tokens.json",
               "chat_template.*")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "tokenizer*", "special_tokens_map.json",
                 "vocab*", "merges.txt", "added_tokens.json", "chat_template.*")


class PublishError(ValueError):
    """What cannot be published as asked (no finished stage, an adapter whose base is a local folder)."""


def final_stage(recipe: Recipe, stage: str | None = None) -> tuple[str, dict[str, Any]]:
    """(name, outputs) of the stage to publish: `stage`, else the recipe's last finished stage with a model."""
    names = [stage] if stage else [p.name for p in reversed(recipe.stages)]
    for name in names:
        plan = recipe.stage(name)
        if plan is None:
            raise PublishError(f"--stage {name!r} is not a stage of this recipe: {[p.name for p in recipe.stages]}")
        record = read_record(plan.output_dir)
        if record is not None and record.status == "done" and "model_path" in record.outputs:
            return name, record.outputs
    raise PublishError(f"no finished stage with a model in {recipe.run_dir}" + (f" ({stage})" if stage else "")
                       + "; run the recipe first")


def export_model_for_hub(recipe: Recipe, export_dir: str | Path | None = None, *, repo_id: str | None = None,
                         stage: str | None = None, adapter: bool = False, base_model: str | None = None,
                         license: str = "apache-2.0", recipe_text: str | None = None) -> Path:
    """Write the files a push uploads (weights, tokenizer, README.md model card) to `export_dir` (default
    `<run_dir>/hub`); raises PublishError for what cannot be published."""
    name, outputs = final_stage(recipe, stage)
    target = Path(export_dir) if export_dir is not None else recipe.run_dir / "hub"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    adapter_dir = outputs.get("adapter_path") or outputs.get("adapter")
    if adapter:
        if not adapter_dir:
            raise PublishError(f"{name} trained no LoRA adapter (use_peft: false); publish the full model")
        base = _adapter_base(Path(adapter_dir), base_model)
        _copy(Path(adapter_dir), target, ADAPTER_FILES)
        config = json.loads((target / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = base
        (target / "adapter_config.json").write_text(json.dumps(config, indent=2))
    elif outputs.get("adapter_path"):  # the `continue` hand-off: merge the adapter into its base for the upload
        from .stages import merge_adapter

        merged = recipe.run_dir / name / "merged"
        if not (merged / "config.json").is_file():
            merge_adapter(outputs["model_path"], outputs["adapter_path"], merged, dtype=recipe.model.dtype)
        _copy(merged, target, MODEL_FILES)
        base = hub_base_model(recipe, base_model)
    else:
        _copy(Path(outputs["model_path"]), target, MODEL_FILES)
        base = hub_base_model(recipe, base_model)
    card = build_model_card(recipe, name, repo_id=repo_id, base_model=base, adapter=adapter, license=license,
                            recipe_text=recipe_text)
    (target / "README.md").write_text(card, encoding="utf-8")
    return target


def hub_base_model(recipe: Recipe, base_model: str | None = None) -> str | None:
    """The Hub id the run started from (`base_model`, else the recipe's model unless it is a local folder or the
    tiny model): the card's `base_model`, which the Hub links to."""
    if base_model:
        return base_model
    name = recipe.model.model_name_or_path
    return None if recipe.model.tiny is not None or not name or _is_local(name) else name


def _adapter_base(adapter_dir: Path, base_model: str | None) -> str:
    recorded = json.loads((adapter_dir / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if base_model:
        return base_model
    if not recorded or _is_local(recorded):
        raise PublishError(
            f"the adapter in {adapter_dir} was trained on the local folder {recorded!r} (with the `merge` hand-off "
            "each stage's base is the previous stage's merged model), which nobody who downloads it has. Publish "
            "the merged model (leave out --adapter), or name the Hub id of those same weights with --base-model")
    return recorded


def _is_local(name: str) -> bool:
    return Path(name).exists() or name.startswith(("/", "./", "../", "~"))


def _copy(source: Path, target: Path, patterns: tuple[str, ...]) -> None:
    files = sorted({path for pattern in patterns for path in source.glob(pattern) if path.is_file()})
    if not any(p.suffix == ".safetensors" for p in files):
        raise PublishError(f"{source} holds no weights (*.safetensors)")
    for path in files:
        shutil.copy2(path, target / path.name)


def build_model_card(recipe: Recipe, stage: str, *, repo_id: str | None = None, base_model: str | None = None,
                     adapter: bool = False, license: str = "apache-2.0", recipe_text: str | None = None) -> str:
    """The model card (README.md): Hub metadata, the stages with what each did, the held-out evaluation table
    of the run's report (`report.json`), the recipe, and how to load the model."""
    from huggingface_hub import ModelCardData

    report_path = recipe.run_dir / REPORT_JSON
    report = json.loads(report_path.read_text()) if report_path.is_file() else {"stages": [], "evaluation": {}}
    plans = {p.name: p for p in recipe.stages}
    datasets = sorted({str(p.args.dataset_name) for p in recipe.stages if getattr(p.args, "dataset_name", None)
                       and "/" in str(p.args.dataset_name) and ":" not in str(p.args.dataset_name)
                       and not _is_local(str(p.args.dataset_name))})
    tags = ["trl-r1", "trl", "reasoning", *dict.fromkeys(p.kind.replace("_", "-") for p in recipe.stages)]
    metadata = ModelCardData(license=license, base_model=base_model, library_name="peft" if adapter else "transformers",
                             pipeline_tag="text-generation", tags=tags, datasets=datasets or None)
    rows = []
    for row in report.get("stages", []):
        plan = plans.get(row["stage"])
        data = getattr(plan.args, "dataset_name", None) if plan else None
        rows.append(f"| {row['stage']} | {plan.kind if plan else ''} | {f'`{data}`' if data else ''} | "
                    f"{row.get('steps') if row.get('steps') is not None else ''} | {row['seconds']} |")
    evaluations = report.get("evaluation") or {}
    ev = recipe.evaluation
    eval_source = (f"`{ev.dataset_name}` (split `{ev.dataset_split}`), {ev.num_prompts or 'all'} prompts x "
                   f"{ev.num_samples} samples at temperature {ev.temperature}, top-p {ev.top_p}, at most "
                   f"{ev.max_new_tokens} new tokens") if ev else ""
    held_out = ("\n".join([f"On {eval_source}; `base` is the model before training.", "",
                           *evaluation_table(evaluations)]) if evaluations
                else "The recipe has no `evaluation` section: no held-out figures.")
    load_name = repo_id or "path/to/this/folder"
    name = base_model or recipe.model.model_name_or_path
    started = f"`{name}`" if name else "the tiny offline model (trl_r1.toy)"
    model = recipe.model
    training = ("full fine-tuning" if not model.use_peft else
                f"LoRA r={model.lora_r} on a {'4-bit (QLoRA)' if model.load_in_4bit else model.dtype} base, "
                f"adapters handed on by `{model.adapter_handoff}`")
    what = (f"the LoRA adapter of stage `{stage}`, on `{base_model}`" if adapter
            else f"the full model after stage `{stage}`" + (" (its LoRA adapter merged into the base)"
                                                              if plans[stage].model_args.use_peft else ""))
    use = (f'from peft import AutoPeftModelForCausalLM\n\nmodel = AutoPeftModelForCausalLM.from_pretrained("{load_name}")'
           if adapter else f'from transformers import pipeline\n\ngenerator = pipeline("text-generation", '
           f'model="{load_name}")\nprint(generator([{{"role": "user", "content": "What is 7 + 5?"}}], '
           'max_new_tokens=512)[0]["generated_text"])')
    recipe_block = (f"\n## Recipe\n\n`{recipe.source or 'recipe'}`:\n\n```yaml\n{recipe_text.strip()}\n```\n"
                    if recipe_text else "")
    body = f"""
# {repo_id.split("/")[-1] if repo_id else "Model trained with trl-r1"}

Trained with trl-r1 following DeepSeek-R1's recipe: {" -> ".join(f"`{p.name}` ({p.kind})" for p in recipe.stages)}.
This repository holds {what}.

- **Started from:** {started}
- **Recipe:** `{recipe.source or "(a mapping)"}`; {training}

## Stages

| stage | kind | dataset | steps | time (s) |
|---|---|---|---|---|
{chr(10).join(rows)}

## Held-out evaluation

{held_out}
{recipe_block}
## Use it

```python
{use}
```
"""
    return f"---\n{metadata.to_yaml()}\n---\n{body}"
