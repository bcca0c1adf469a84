"""`trl-r1` command line: the R1 pipeline (`run`), each stage alone, and the dataset builders.

`trl-r1 run RECIPE` runs a recipe (trl_r1.pipeline); `trl-r1 sft|grpo|ppo --config stage.yaml` runs one stage
from a TRL-style flat YAML. Several processes: `--num_processes N` re-launches the command through
`accelerate launch` (DDP; on a machine without GPUs with gloo on CPU), or launch it yourself with
`accelerate launch [--config_file recipes/accelerate_configs/ddp.yaml] -m trl_r1.cli run RECIPE`.
Heavy modules are imported when a command is chosen, so `trl-r1 --help` stays instant.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from .registry import resolve_import_path

# command -> ("module:function", help). Each function takes the remaining argv and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("trl_r1.cli:run_main", "run a recipe YAML: cold-start SFT -> GRPO/PPO -> rejection sampling -> SFT"),
    "sft": ("trl_r1.cli:sft_main", "run the SFT stage alone (--config stage.yaml, TRL-style flat YAML works)"),
    "grpo": ("trl_r1.cli:grpo_main", "run the GRPO stage alone (trl-r1's R1GRPOTrainer)"),
    "ppo": ("trl_r1.cli:ppo_main", "run the PPO stage alone (actor-critic with GAE)"),
    "rejection-sample": ("trl_r1.data.rejection_sampling:main", "sample k per prompt, keep verified traces"),
    "distill": ("trl_r1.data.distillation:main", "teacher traces -> R1-filtered <think> SFT dataset (verified when rewards are set)"),
    "tiny-model": ("trl_r1.toy.tiny:main", "build the tiny offline model + tokenizer used by demos and tests"),
    "model": ("trl_r1.rehearsal.pretrained:main", "convert a named pretrained model offline (smollm2-135m-instruct) "
              "and print its checkpoint path"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: trl-r1 <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `trl-r1 <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"trl-r1: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    return int(resolve_import_path(COMMANDS[command][0])(rest) or 0)


# --------------------------------------------------------------------------------------------- the pipeline


def run_main(argv: list[str] | None = None) -> int:
    """`trl-r1 run RECIPE [--run-dir DIR] [--from-stage STAGE] [--dry-run] [--set SECTION.KEY=VALUE ...]
    [--num_processes N]`."""
    parser = argparse.ArgumentParser(prog="trl-r1 run", description="Run an R1 pipeline recipe: cold-start SFT -> "
                                     "GRPO/PPO -> rejection sampling -> SFT, skipping finished stages.")
    parser.add_argument("recipe", help="recipe YAML (see recipes/ and docs/recipes.md)")
    parser.add_argument("--run-dir", help="override the recipe's run_dir")
    parser.add_argument("--from-stage", metavar="STAGE",
                        help="redo this stage (one of the recipe's, checked against it) and every later one")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the resolved plan, run nothing")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one recipe key, e.g. --set rl.learning_rate=1e-6 (value parsed as YAML)")
    parser.add_argument("--smoke", action="store_true", help="rehearse the recipe on CPU: its real model shape "
                        "(2 narrow layers), tokenizer, chat template and dataset schemas, 1 step per stage "
                        "(trl_r1.pipeline.smoke); writes under --run-dir, default <run_dir>-smoke")
    _add_launch_arguments(parser)
    args = parser.parse_args(argv)
    if _should_relaunch(args):
        return relaunch(["run", *_without_launch_arguments(argv)], args.num_processes)
    _setup_logging()

    def work() -> None:
        from .pipeline import load_recipe, run_recipe

        data = recipe_data(args)
        run_recipe(load_recipe(data, check_hardware=not args.dry_run), from_stage=args.from_stage,
                   dry_run=args.dry_run)
        if args.smoke and not args.dry_run:  # did the smoke run train on real tokens and accept samples?
            from .pipeline.smoke import check_smoke_run
            from .pipeline.stages import StageError

            problems = check_smoke_run(data["run_dir"])
            if problems:
                raise StageError("smoke run: " + "; ".join(problems))

    return _exit_code("trl-r1 run", work)


def recipe_data(args: argparse.Namespace) -> dict[str, Any]:
    """The recipe mapping a `trl-r1 run` command line describes: the YAML, then `--set` overrides, then
    `--run-dir`. The one place where a command line changes a recipe, so a whole-recipe transform (a smoke-test
    shortening, say) plugs in here."""
    from .config import apply_override
    from .pipeline.recipe import RecipeError, read_yaml

    data = read_yaml(args.recipe)
    if getattr(args, "smoke", False):  # the whole-recipe transform: real shape, tiny widths, 1 step per stage
        from .pipeline.smoke import prepare_smoke

        data = prepare_smoke(data, args.run_dir or f"{str(data.get('run_dir', 'runs/recipe')).rstrip('/')}-smoke")
    for item in args.set:
        apply_override(data, item, RecipeError)
    if args.run_dir and not getattr(args, "smoke", False):
        data["run_dir"] = args.run_dir
    return data


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
    _add_launch_arguments(parser)
    args, rest = parser.parse_known_args(argv)
    if _should_relaunch(args):
        return relaunch([command, *_without_launch_arguments(argv)], args.num_processes)
    _setup_logging()

    def work() -> None:
        from .config import flag_overrides
        from .pipeline import load_recipe, run_recipe
        from .pipeline.recipe import RecipeError, flat_to_recipe, read_yaml

        flat = read_yaml(args.config) if args.config else {}
        flat.update(flag_overrides(rest, RecipeError))
        if stage == "rl":
            algorithm = flat.setdefault("algorithm", command)
            if algorithm != command:
                message = f"{command}: algorithm {algorithm!r} contradicts the command; use `trl-r1 {algorithm}`"
                raise RecipeError([message])
        recipe = load_recipe(flat_to_recipe(flat, stage), single_stage=True, check_hardware=not args.dry_run)
        run_recipe(recipe, dry_run=args.dry_run)

    return _exit_code(f"trl-r1 {command}", work)


def _exit_code(prog: str, work: Callable[[], None]) -> int:
    """Run a command's work; a bad recipe exits 2 and a failed stage 1, each with one clear line on stderr."""
    from .config import ConfigError
    from .pipeline import StageError
    from .pipeline.ranks import WorldSizeError, shut_down

    succeeded = False
    try:
        work()
        succeeded = True
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except (StageError, WorldSizeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    finally:
        shut_down(succeeded=succeeded)
    return 0


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


# --------------------------------------------------------------------------------------------- several processes


def _add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num_processes", "--num-processes", type=int, default=1, metavar="N",
                        help="run with N processes on this machine (re-launched through `accelerate launch`: DDP, "
                             "gloo on CPU when there is no GPU); training stages are data-parallel")


def _should_relaunch(args: argparse.Namespace) -> bool:
    if args.num_processes < 1:
        raise SystemExit("--num_processes must be >= 1")
    return args.num_processes > 1 and "WORLD_SIZE" not in os.environ and not getattr(args, "dry_run", False)


def _without_launch_arguments(argv: list[str] | None) -> list[str]:
    """`argv` without `--num_processes N` (the launched processes must not launch again)."""
    out, tokens, i = [], list(argv or []), 0
    while i < len(tokens):
        name, _, inline = tokens[i].partition("=")
        if name in ("--num_processes", "--num-processes"):
            i += 1 if inline else 2
            continue
        out.append(tokens[i])
        i += 1
    return out


def accelerate_config(num_processes: int, *, use_cpu: bool, port: int) -> dict[str, Any]:
    """The accelerate config `--num_processes` launches with: DDP on this machine (gloo when `use_cpu`).

    >>> accelerate_config(2, use_cpu=True, port=29511)["distributed_type"]
    'MULTI_GPU'
    """
    return {"compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU", "num_machines": 1,
            "machine_rank": 0, "num_processes": num_processes, "use_cpu": use_cpu, "mixed_precision": "no",
            "main_process_port": port, "rdzv_backend": "static", "same_network": True, "gpu_ids": "all",
            "downcast_bf16": "no", "main_training_function": "main", "debug": False}


def relaunch(command: list[str], num_processes: int) -> int:
    """Run `trl-r1 <command>` in `num_processes` processes through `accelerate launch`; returns its exit code."""
    import torch
    import yaml

    use_cpu = not torch.cuda.is_available()
    config = accelerate_config(num_processes, use_cpu=use_cpu, port=free_port())
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="trl-r1-accelerate-", delete=False) as f:
        yaml.safe_dump(config, f)
    try:
        launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", f.name,
                  "-m", "trl_r1.cli", *command]
        print(f"trl-r1: launching {num_processes} processes ({'CPU, gloo' if use_cpu else 'GPUs, DDP'}): "
              f"{' '.join(launch)}", file=sys.stderr)
        return subprocess.call(launch)
    finally:
        os.unlink(f.name)


def free_port() -> int:
    """A TCP port free on this machine now (so that two launches side by side do not collide on 29500)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
