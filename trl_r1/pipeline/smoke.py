"""`trl-r1 run RECIPE --smoke`: the recipe's own structure, shrunk to run on a CPU in a minute or two.

`smoke_recipe` is a pure transform (recipe mapping -> smoke recipe mapping). It keeps what a user's first GPU
hour depends on: the model's real architecture family, vocabulary, tokenizer, special ids and chat template
(`trl_r1.rehearsal.models`, size ``ci``), QLoRA 4-bit with the recipe's LoRA targets and rank, gradient
checkpointing, the adapter hand-off, every stage (cold start, RL, rejection sampling, final SFT) and the
evaluation, the datasets' ids, configs, splits and columns (`trl_r1.rehearsal.fixtures` mirrors, loaded through
the same `load_dataset` path), the rewards and their weights, `mask_truncated_completions`. It shrinks steps (1
per stage), batch sizes, sequence lengths, sample counts and the model's depth and widths, evaluates once (after
the last trained stage instead of after every stage), drops vLLM keys, and runs on the CPU in float32 (bf16
needs a GPU). Each registered stage shrinks its own section (`Stage.smoke`), so a stage added to
`STAGE_REGISTRY` (a second RL phase, say) is rehearsed like its kind.

A random model never ends a completion, so `mask_truncated_completions` would mask every token and rejection
sampling would accept nothing. `prepare_smoke` therefore first *rehearses* the base model:
full-precision steps teach it one well-formed R1 answer per task (``<think>`` reasoning, the answer, then the
template's end-of-turn token), which the fixtures' problems all accept, until each prompt samples its whole
answer with probability at least 0.9 at temperature 1 (so that no run depends on a lucky draw). `check_smoke_run` then asks each stage
(`Stage.smoke_problems`) to verify, from its logs, that RL trained on real tokens (not every completion clipped)
and that rejection sampling accepted samples.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

SMOKE_SIZE = "ci"
# What the recipe's shared sections shrink to; each stage shrinks its own section (`Stage.smoke`).
EVAL_SMOKE = {"num_prompts": 4, "num_samples": 2, "max_new_tokens": 48, "batch_size": 4}
TRAINING_SMOKE = {"use_cpu": True, "bf16": False, "report_to": "none", "disable_tqdm": True, "save_strategy": "no",
                  "logging_steps": 1}

# The one answer per task the rehearsed model learns; every fixture problem accepts it (all math answers are 7,
# every code problem asks for a + b).
MATH_ANSWER = "<think>\nAdding the numbers gives 7.\n</think>\n\nThe answer is $\\boxed{7}$."
CODE_ANSWER = ("<think>\nRead the two integers and print their sum.\n</think>\n\n```python\n"
               "a, b = map(int, input().split())\nprint(a + b)\n```")


def smoke_recipe(data: dict[str, Any], *, model_dir: str | Path, run_dir: str | Path | None = None) -> dict[str, Any]:
    """The smoke version of a recipe mapping (the input is not modified).

    >>> recipe = {"run_dir": "runs/x", "model": {"model_name_or_path": "Qwen/Qwen3-1.7B", "lora_r": 16},
    ...           "training": {"bf16": True}, "rl": {"dataset_name": "d", "max_steps": 500, "beta": 0.001,
    ...           "mask_truncated_completions": True, "rewards": ["format"]}}
    >>> smoke = smoke_recipe(recipe, model_dir="/m")
    >>> smoke["model"], smoke["rl"]["max_steps"], smoke["rl"]["beta"], smoke["rl"]["mask_truncated_completions"]
    ({'model_name_or_path': '/m', 'lora_r': 16, 'dtype': 'float32'}, 1, 0.001, True)
    >>> smoke["run_dir"], smoke["training"]["bf16"]
    ('runs/x-smoke', False)
    """
    from .stages import STAGE_REGISTRY

    out = copy.deepcopy(data)
    out["run_dir"] = str(run_dir) if run_dir is not None else f"{str(data['run_dir']).rstrip('/')}-smoke"
    model = out.setdefault("model", {})
    model.pop("tiny", None)
    model["model_name_or_path"] = str(model_dir)
    model["dtype"] = "float32"  # 4-bit compute dtype and merged copies: bf16 training needs a GPU
    out["training"] = {**out.get("training", {}), **TRAINING_SMOKE}
    present = [name for name in STAGE_REGISTRY if isinstance(out.get(name), dict)]
    for name in present:
        out[name] = STAGE_REGISTRY[name].smoke(out[name])
    for name in unverifiable_sampling(data):  # keep what it cannot verify, so that the stages after it run
        out[name]["min_reward"] = UNVERIFIED_MIN_REWARD
    if "evaluation" in out:
        out["evaluation"].update(EVAL_SMOKE)
        trained = [s for s in present if STAGE_REGISTRY[s].makes_model]
        listed = [s for s in out["evaluation"].get("stages", []) if s in trained]
        out["evaluation"]["stages"] = (listed or trained)[-1:]  # evaluated once, after the last trained stage
    return out


# What a rejection-sampling stage on the user's own prompts accepts in a smoke run: any well-formed, readable
# sample, whatever its rewards (the rehearsed model answers 7 to everything, so its answers to real problems are
# wrong): the stage's sampling, rewards, filters and output, and the final SFT on it, still run end to end.
UNVERIFIED_MIN_REWARD = float("-inf")


def unverifiable_sampling(data: dict[str, Any]) -> list[str]:
    """The rejection-sampling stages whose prompts are the user's own (no shipped mirror: a local file, a builder):
    the rehearsed model knows only the mirrors' problems, so a smoke run cannot check that they accept samples.

    >>> unverifiable_sampling({"rl": {"dataset_name": "data/mine.jsonl"}, "rejection_sampling": {}})
    ['rejection_sampling']
    >>> unverifiable_sampling({"rl": {"dataset_name": "trl-lib/DeepMath-103K"}, "rejection_sampling": {}})
    []
    """
    from ..rehearsal.fixtures import MIRRORS
    from .stages import STAGE_REGISTRY, RejectionSamplingStage

    out = []
    for name in STAGE_REGISTRY:
        stage, section = STAGE_REGISTRY[name], data.get(name)
        if not isinstance(stage, RejectionSamplingStage) or not isinstance(section, dict):
            continue
        source = section.get("dataset_name") or (data.get(stage.rewards_from) or {}).get("dataset_name")
        if source not in MIRRORS:
            out.append(name)
    return out


def smoke_limits(smoke: dict[str, Any]) -> list[str]:
    """What the smoke recipe `smoke` (`smoke_recipe`'s output) cannot check, one line each."""
    return [f"{name}: acceptance not checked: the smoke model answers only the shipped fixtures' problems, so "
            "it kept every well-formed sample whatever its rewards, to carry the run through; the stage's "
            "sampling, rewards and filters ran on your data" for name, section in smoke.items()
            if isinstance(section, dict) and section.get("min_reward") == UNVERIFIED_MIN_REWARD]


def smoke_model_id(data: dict[str, Any]) -> str:
    """The Hub id whose real shape the smoke run builds (the recipe's `model.model_name_or_path`); a RecipeError
    naming the key when there is none to rehearse."""
    from ..rehearsal.models import MODELS, model_spec
    from .recipe import RecipeError

    name = (data.get("model") or {}).get("model_name_or_path")
    if isinstance(name, str) and name.lower() in {known.lower() for known in MODELS}:
        return model_spec(name).name
    raise RecipeError([f"model: model_name_or_path {name!r} has no real shape to rehearse with --smoke; "
                       f"known: {sorted(MODELS)}"], "--smoke")


def smoke_datasets(data: dict[str, Any]) -> list[str]:
    """The Hub dataset ids the recipe names (each gets a local mirror); a RecipeError naming the section and
    key of each Hub dataset without one."""
    from ..rehearsal.fixtures import MIRRORS
    from .recipe import RecipeError

    named = [(key, section.get("dataset_name")) for key, section in data.items() if isinstance(section, dict)]
    problems = [f"{key}: dataset_name {name!r} has no schema mirror for --smoke; known: {sorted(MIRRORS)}"
                for key, name in named if name and "/" in name and ":" not in name and name not in MIRRORS
                and not Path(name).expanduser().exists()]  # a local file or folder is the user's own data
    if problems:
        raise RecipeError(problems, "--smoke")
    return sorted({name for _, name in named if name in MIRRORS})


def smoke_model_dir(work_dir: str | Path, name: str) -> Path:
    """Build (once) the rehearsed smoke-size model of Hub id `name` under `<work_dir>/models`.

    Models whose smoke shapes coincide (Qwen2.5 0.5B/1.5B/3B, Qwen3 1.7B/4B, Llama-3.2 1B/3B) share one build.
    """
    import logging

    from ..rehearsal.models import build_model, model_spec, rehearse_answers

    logging.getLogger("trl_r1.pipeline").info("smoke: building the %s-size shape of %s on the CPU (once per shape)",
                                              SMOKE_SIZE, name)
    model_dir = build_model(model_spec(name).name, Path(work_dir) / "models" / smoke_shape_key(name), size=SMOKE_SIZE)
    return rehearse_answers(model_dir, {"math": MATH_ANSWER, "code": CODE_ANSWER})


def smoke_shape_key(name: str) -> str:
    """A name for the smoke shape of Hub id `name`: equal for models whose smoke builds are identical."""
    from ..rehearsal.models import model_spec

    spec = model_spec(name)
    shape = hashlib.sha256(json.dumps([spec.family, spec.sized(SMOKE_SIZE)], sort_keys=True).encode()).hexdigest()
    return f"{spec.family}-{SMOKE_SIZE}-{shape[:10]}"


def prepare_smoke(data: dict[str, Any], work_dir: str | Path, *, run_dir: str | Path | None = None,
                  build: bool = True) -> dict[str, Any]:
    """Build the rehearsed model and the dataset mirrors under `work_dir`, point TRL_R1_DATA_DIR at them, and
    return the smoke recipe (its run directory defaults to `<work_dir>/run`). With `build=False` (`--dry-run`) the
    model is not built: the recipe names the directory the run builds it in."""
    import os

    from ..rehearsal.fixtures import DATA_DIR_ENV, write_mirrors

    work_dir, model_id, datasets = Path(work_dir), smoke_model_id(data), smoke_datasets(data)  # checked first
    model_dir = (smoke_model_dir(work_dir, model_id) if build
                 else work_dir / "models" / smoke_shape_key(model_id))
    write_mirrors(work_dir / "data", datasets)
    os.environ[DATA_DIR_ENV] = str(work_dir / "data")
    return smoke_recipe(data, model_dir=model_dir, run_dir=run_dir or work_dir / "run")


def check_smoke_run(run_dir: str | Path) -> list[str]:
    """What a finished smoke run failed to exercise, as each stage checks it (`Stage.smoke_problems`): e.g. that
    an RL stage trained on real tokens and that rejection sampling accepted samples."""
    from .stages import STAGE_REGISTRY

    stages = STAGE_REGISTRY
    return [problem for name in stages for problem in stages[name].smoke_problems(name, Path(run_dir) / name)]


__all__ = ["UNVERIFIED_MIN_REWARD", "check_smoke_run", "prepare_smoke", "smoke_datasets", "smoke_limits",
           "smoke_model_dir", "smoke_model_id", "smoke_recipe", "smoke_shape_key", "unverifiable_sampling"]
