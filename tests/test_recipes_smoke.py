"""Every shipped recipe, rehearsed end to end on CPU (`trl-r1 run RECIPE --smoke`).

Each run keeps the recipe's structure (QLoRA 4-bit with its LoRA settings, gradient checkpointing, the adapter
hand-off, every stage, the evaluation, its datasets' ids/configs/splits/columns and its rewards) on the model's
real vocabulary, tokenizer and chat template, and must train on real tokens and accept rejection samples.
"""

import json
from pathlib import Path

import pytest
import yaml

from trl_r1.pipeline import run_recipe
from trl_r1.pipeline.smoke import check_smoke_run, prepare_smoke, smoke_model_id, smoke_recipe, smoke_shape_key
from trl_r1.pipeline.stages import read_record

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("recipes/*/*.yaml")
                 if p.parent.name not in ("tiny", "accelerate_configs", "smollm2-135m-instruct"))  # real weights: test_smollm2


def _smoke_key(recipe: str) -> str:
    data = yaml.safe_load((ROOT / recipe).read_text())
    smoke = smoke_recipe(data, model_dir=smoke_shape_key(smoke_model_id(data)), run_dir="<run>")
    return json.dumps(smoke, sort_keys=True)


# Recipes whose smoke runs are the same computation (same smoke shape, same kept keys: e.g. Qwen2.5 0.5B/1.5B/3B
# math) share one run: 10 runs cover the 18 recipes.
GROUPS: dict[str, list[str]] = {}
for _recipe in RECIPES:
    GROUPS.setdefault(_smoke_key(_recipe), []).append(_recipe)


def test_every_model_recipe_is_covered():
    assert len(RECIPES) == 18 and sorted(r for group in GROUPS.values() for r in group) == RECIPES
    assert FAST_TIER_RECIPE in RECIPES  # the fast tier keeps one smoke run


# The fast tier rehearses the recipe the README starts from; the full tier (`slow`) every other one.
FAST_TIER_RECIPE = "recipes/qwen2.5-1.5b-instruct/math.yaml"


@pytest.mark.parametrize("recipes", [
    pytest.param(group, id=" + ".join(group), marks=[] if FAST_TIER_RECIPE in group else [pytest.mark.slow])
    for group in GROUPS.values()])
def test_recipe_smoke_run(recipes, smoke_work_dir, smoke_model, tmp_path):
    data = yaml.safe_load((ROOT / recipes[0]).read_text())
    smoke_model(smoke_model_id(data))  # the cached rehearsed model, where prepare_smoke looks for it
    smoke = prepare_smoke(data, smoke_work_dir, run_dir=tmp_path / "run")
    report = run_recipe(smoke, echo=lambda _: None)
    assert check_smoke_run(tmp_path / "run") == []
    stages = [s for s in ("cold_start", "rl", "rejection_sampling", "final_sft") if s in data]
    assert report is not None
    assert [read_record(tmp_path / "run" / s).status for s in stages] == ["done"] * len(stages)
    for name in ("cold_start", "rl", "final_sft"):
        record = read_record(tmp_path / "run" / name)
        assert record.status == "done" and record.metrics["global_step"] == 1
        # QLoRA unless the stage says otherwise (rl with vLLM colocate too: the adapter is pushed to vLLM unmerged,
        # docs/troubleshooting.md, "QLoRA and vLLM")
        four_bit = data[name].get("load_in_4bit", data["model"].get("load_in_4bit", True))
        assert record.metrics["loaded_in_4bit"] == four_bit, f"{name}: 4-bit base is {not four_bit}, recipe says {four_bit}"
        assert record.metrics["trainable_params"] > 0
        adapter = json.loads((tmp_path / "run" / name / "adapter_config.json").read_text())
        assert adapter["r"] == data["model"]["lora_r"] and adapter["lora_alpha"] == data["model"]["lora_alpha"]
        args = json.loads((tmp_path / "run" / name / "trainer_state.json").read_text())
        assert args["global_step"] == 1
    rl = json.loads((tmp_path / "run" / "rl" / "trainer_state.json").read_text())["log_history"][0]
    assert rl["completions/clipped_ratio"] < 1 and rl["num_tokens"] > 0
    for reward in data["rl"]["rewards"]:  # every reward the recipe names was computed
        assert any(k.startswith("rewards/") and reward["name"] in k for k in rl), (reward, sorted(rl))
    if "evaluation" in data:
        evaluated = read_record(tmp_path / "run" / "final_sft").evaluation
        assert evaluated, "the held-out evaluation did not run"
