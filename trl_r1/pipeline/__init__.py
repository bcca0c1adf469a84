"""`trl-r1 run <recipe.yaml>` (the R1 pipeline) and `trl-r1 sft|grpo|ppo --config stage.yaml` (one stage).

Recipes are described in `trl_r1.pipeline.recipe`; docs/pipeline.md and docs/recipes.md are the user guide.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, Callable

import yaml

from .recipe import STAGES, Recipe, RecipeError, flat_to_recipe, load_recipe, read_yaml
from .stages import StageError

__all__ = [
    "STAGES",
    "Recipe",
    "RecipeError",
    "StageError",
    "grpo_main",
    "load_recipe",
    "main",
    "ppo_main",
    "run_recipe",
    "sft_main",
]


def run_recipe(recipe: Recipe | str | dict, *, from_stage: str | None = None, dry_run: bool = False,
               echo=print) -> dict[str, Any] | None:
    """Run a recipe (or only print its plan with `dry_run`); returns the report dict of a real run."""
    from .runner import Pipeline

    if not isinstance(recipe, Recipe):
        recipe = load_recipe(recipe)
    pipeline = Pipeline(recipe, from_stage=from_stage, echo=echo)
    if dry_run:
        for line in pipeline.plan_lines():
            echo(line)
        return None
    return pipeline.run()


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 run RECIPE [--run-dir DIR] [--from-stage STAGE] [--dry-run] [--set SECTION.KEY=VALUE ...]`."""
    parser = argparse.ArgumentParser(prog="trl-r1 run", description="Run an R1 pipeline recipe: cold-start SFT -> "
                                     "GRPO/PPO -> rejection sampling -> SFT, skipping finished stages.")
    parser.add_argument("recipe", help="recipe YAML (see recipes/ and docs/recipes.md)")
    parser.add_argument("--run-dir", help="override the recipe's run_dir")
    parser.add_argument("--from-stage", choices=STAGES, help="redo this stage and every later one")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the resolved plan, run nothing")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one recipe key, e.g. --set rl.learning_rate=1e-6 (value parsed as YAML)")
    parser.add_argument("--smoke", action="store_true", help="rehearse the recipe on CPU: its real model shape "
                        "(2 narrow layers), tokenizer, chat template and dataset schemas, 1 step per stage "
                        "(trl_r1.pipeline.smoke); writes under --run-dir, default <run_dir>-smoke")
    args = parser.parse_args(argv)
    _setup_logging()

    def work() -> None:
        data = read_yaml(args.recipe)
        if args.smoke:  # smoke hook 1/2: recipe -> smoke recipe (builds the rehearsed model and data mirrors)
            from .smoke import prepare_smoke

            data = prepare_smoke(data, args.run_dir or f"{str(data.get('run_dir', 'runs/recipe')).rstrip('/')}-smoke")
        for item in args.set:
            _apply_override(data, item)
        if args.run_dir and not args.smoke:
            data["run_dir"] = args.run_dir
        run_recipe(load_recipe(data, check_hardware=not args.dry_run), from_stage=args.from_stage,
                   dry_run=args.dry_run)
        if args.smoke and not args.dry_run:  # smoke hook 2/2: did it train on real tokens and accept samples?
            from .smoke import check_smoke_run

            problems = check_smoke_run(data["run_dir"])
            if problems:
                raise StageError("smoke run: " + "; ".join(problems))

    return _exit_code("trl-r1 run", work)


def _exit_code(prog: str, work: Callable[[], None]) -> int:
    """Run a command's work; a bad recipe exits 2 and a failed stage 1, each with one clear line on stderr."""
    try:
        work()
    except RecipeError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except StageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return 0


def sft_main(argv: list[str] | None = None) -> int:
    """`trl-r1 sft --config stage.yaml [--KEY VALUE ...]`: one SFT stage from a TRL-style flat YAML."""
    return _single_stage("sft", "cold_start", argv)


def grpo_main(argv: list[str] | None = None) -> int:
    """`trl-r1 grpo --config stage.yaml [--KEY VALUE ...]`: one GRPO stage (trl_r1's R1GRPOTrainer)."""
    return _single_stage("grpo", "rl", argv)


def ppo_main(argv: list[str] | None = None) -> int:
    """`trl-r1 ppo --config stage.yaml [--KEY VALUE ...]`: one PPO stage (actor-critic with GAE)."""
    return _single_stage("ppo", "rl", argv)


def _single_stage(command: str, stage: str, argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"trl-r1 {command}", description=f"Run the {command} stage alone. The YAML is flat, as for `trl "
        f"{'grpo' if command == 'ppo' else command}`: trl.ModelConfig, the TRL config and data keys in one "
        "namespace (QLoRA defaults as in recipes). Any key can be overridden with --KEY VALUE.")
    parser.add_argument("--config", help="flat YAML with the stage's keys (output_dir is where it writes)")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the plan, run nothing")
    args, rest = parser.parse_known_args(argv)
    _setup_logging()

    def work() -> None:
        flat = read_yaml(args.config) if args.config else {}
        flat.update(_flag_overrides(rest))
        if stage == "rl":
            algorithm = flat.setdefault("algorithm", command)
            if algorithm != command:
                message = f"{command}: algorithm {algorithm!r} contradicts the command; use `trl-r1 {algorithm}`"
                raise RecipeError([message])
        recipe = load_recipe(flat_to_recipe(flat, stage), single_stage=True, check_hardware=not args.dry_run)
        run_recipe(recipe, dry_run=args.dry_run)

    return _exit_code(f"trl-r1 {command}", work)


def _flag_overrides(tokens: list[str]) -> dict[str, Any]:
    """`--key value` pairs (values parsed as YAML; a bare `--flag` is true), as TRL's command lines.

    >>> _flag_overrides(["--lora_r", "32", "--bf16", "--learning_rate", "1e-6"])
    {'lora_r': 32, 'bf16': True, 'learning_rate': '1e-6'}
    """
    out: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            raise RecipeError([f"unexpected argument {token!r}; overrides are --KEY VALUE"])
        key, _, inline = token[2:].partition("=")
        if inline:
            out[key], i = yaml.safe_load(inline), i + 1
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out[key], i = yaml.safe_load(tokens[i + 1]), i + 2
        else:
            out[key], i = True, i + 1
    return out


def _apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one `--set section.key=value` to the raw recipe mapping.

    >>> recipe = {"rl": {"learning_rate": 1e-6}}
    >>> _apply_override(recipe, "rl.max_steps=10"); recipe
    {'rl': {'learning_rate': 1e-06, 'max_steps': 10}}
    """
    path, sep, value = item.partition("=")
    section, dot, key = path.partition(".")
    if not sep or not section:
        raise RecipeError([f"--set {item!r}: expected SECTION.KEY=VALUE or run_dir=VALUE"])
    if not dot:
        data[section] = yaml.safe_load(value)
        return
    if not isinstance(data.setdefault(section, {}), dict):
        raise RecipeError([f"--set {item!r}: section {section!r} is not a mapping"])
    data[section][key] = yaml.safe_load(value)


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
