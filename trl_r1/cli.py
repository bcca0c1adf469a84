"""`trl-r1` command line: the R1 pipeline (`run`), each stage alone, and the dataset builders.

`trl-r1 run RECIPE` runs a recipe (trl_r1.pipeline); `trl-r1 sft|grpo|ppo --config stage.yaml` runs one stage
from a TRL-style flat YAML. Several processes: `--num_processes N` re-launches the command through
`accelerate launch` (DDP; on a machine without GPUs with gloo on CPU), or launch it yourself with
`accelerate launch [--config_file recipes/accelerate_configs/ddp.yaml] -m trl_r1.cli run RECIPE`.
Heavy modules are imported when a command is chosen, so `trl-r1 --help` stays instant.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .registry import resolve_import_path

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    from .pipeline.recipe import StagePlan

# command -> ("module:function", help). Each function takes the remaining argv and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("trl_r1.cli:run_main", "run a recipe YAML: cold-start SFT -> GRPO/PPO -> rejection sampling -> SFT"),
    "sft": ("trl_r1.cli:sft_main", "run the SFT stage alone (--config stage.yaml, TRL-style flat YAML works)"),
    "grpo": ("trl_r1.cli:grpo_main", "run the GRPO stage alone (trl-r1's R1GRPOTrainer)"),
    "ppo": ("trl_r1.cli:ppo_main", "run the PPO stage alone (actor-critic with GAE)"),
    "evaluate": ("trl_r1.pipeline.evaluate:main", "a model or adapter on a benchmark (MATH-500, AIME, a file): "
                 "pass@1 over k samples, pass@k"),
    "publish": ("trl_r1.cli:publish_main", "push a run's final model (merged, or adapter + base) with a model "
                "card to the Hub"),
    "rejection-sample": ("trl_r1.data.rejection_sampling:main", "sample k per prompt, keep verified traces"),
    "distill": ("trl_r1.data.distillation:main", "teacher traces -> R1-filtered <think> SFT dataset (verified when rewards are set)"),
    "tiny-model": ("trl_r1.toy.tiny:main", "build the tiny offline model + tokenizer used by demos and tests"),
    "model": ("trl_r1.rehearsal.pretrained:main", "convert a named pretrained model offline (smollm2-135m-instruct) "
              "and print its checkpoint path"),
}


class _KernelsNoticeFilter(logging.Filter):
    """Drops bitsandbytes' "Failed to load CPU gemm_4bit_forward from kernels-community" warning, printed on every
    command on a machine without the optional `kernels` package: bitsandbytes falls back to its own CPU kernel,
    so it asks nothing of the user. Every other bitsandbytes message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "gemm_4bit_forward from kernels-community" not in str(record.msg)


logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_KernelsNoticeFilter())


def either_spelling(parser: argparse.ArgumentParser, argv: list[str] | None) -> list[str]:
    """`argv` with each flag spelled as `parser` declares it: every trl-r1 flag takes dashes or underscores
    (`--run-dir` / `--run_dir`, `--learning-rate` / `--learning_rate`), as TRL's parser does."""
    known = parser._option_string_actions
    out = []
    for token in list(sys.argv[1:] if argv is None else argv):
        name, eq, value = token.partition("=")
        if token.startswith("--") and name not in known:
            for other in ("--" + name[2:].replace("-", "_"), "--" + name[2:].replace("_", "-")):
                if other in known:
                    token = other + eq + value
                    break
        out.append(token)
    return out


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: trl-r1 <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `trl-r1 <command> --help` for a command's options."]
    return "\n".join(lines)


LAUNCHER_PID = "TRL_R1_LAUNCHER_PID"


def die_with_launcher() -> None:
    """In a rank that `launch_ranks` started, ask Linux to kill this process when its launcher dies: torchelastic
    starts each rank in a session of its own, so a SIGKILL of the launcher's process group (a scheduler, `kill -9
    -PGID`) would leave the ranks training as orphans into the run_dir. Nothing is lost that a kill of the whole
    run would not lose; the next run resumes from the last checkpoint."""
    launcher = os.environ.get(LAUNCHER_PID)
    if launcher is None or not sys.platform.startswith("linux") or os.getppid() != int(launcher):
        return
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(launcher):  # the launcher died before the request took effect
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    die_with_launcher()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command.startswith("-") and any(word in COMMANDS for word in rest):
        word = next(word for word in rest if word in COMMANDS)
        print(f"trl-r1: {command} is an option of a command; put options after the command: trl-r1 {word} ... "
              f"{command}", file=sys.stderr)
        return 2
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
    parser.add_argument("--dry-run", action="store_true", help="run the preflight (datasets, chat template, "
                        "backends, memory) and print the plan with its cost; build and train nothing")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one recipe key, e.g. --set rl.learning_rate=1e-6 (value parsed as YAML)")
    _add_card_argument(parser)
    parser.add_argument("--smoke", action="store_true", help="rehearse the recipe on CPU: its real model shape "
                        "(2 narrow layers), tokenizer, chat template and dataset schemas, 1 step per stage "
                        "(trl_r1.pipeline.smoke); writes under --run-dir, default <run_dir>-smoke")
    _add_launch_arguments(parser)
    misplaced_run_argument(parser, argv or [])
    if argv is not None and "--config" in argv:
        parser.error("`trl-r1 run` takes the recipe as its argument, not --config: trl-r1 run RECIPE.yaml "
                     "(--config is for the one-stage commands, trl-r1 sft|grpo|ppo)")
    argv = either_spelling(parser, argv)
    args = parser.parse_args(argv)
    card = _card(parser, args)
    if _should_relaunch(args):
        return relaunch(["run", *_without_launch_arguments(argv)], args.num_processes)
    _setup_logging()

    def work() -> None:
        from .pipeline import load_recipe, run_recipe

        from .trainers.trl_compat import planned_world_size

        data = recipe_data(args)
        with planned_world_size(args.num_processes if args.dry_run else 1):  # the batch checks of N processes
            run_recipe(load_recipe(data, check_hardware=_checks_hardware(args)), from_stage=args.from_stage,
                       dry_run=args.dry_run, overridden=[item.partition("=")[0] for item in args.set], card=card,
                       model_built_by_run=args.smoke, num_processes=args.num_processes)
        if args.smoke and not args.dry_run:  # did the smoke run train on real tokens and accept samples?
            from .pipeline.smoke import check_smoke_run, smoke_limits
            from .pipeline.stages import StageError

            problems = check_smoke_run(data["run_dir"])
            if problems:
                raise StageError("smoke run: " + "; ".join(problems))
            print(f"smoke run passed: every stage ran on the CPU ({data['run_dir']})")
            for limit in smoke_limits(data):
                print(f"note: {limit}")

    return _exit_code("trl-r1 run", work)


def misplaced_run_argument(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A usage error, with the right form, for `--set KEY VALUE` (argparse would call VALUE an unrecognized
    argument) and for accelerate's `--config_file` (`trl-r1 run` launches accelerate itself)."""
    for i, word in enumerate(argv[:-2]):
        if word == "--set" and "=" not in argv[i + 1] and not argv[i + 2].startswith("-"):
            parser.error(f"--set takes SECTION.KEY=VALUE as one word: --set {argv[i + 1]}={argv[i + 2]}")
    if any(word.split("=")[0] in ("--config_file", "--config-file") for word in argv):
        parser.error("--config_file is a flag of `accelerate launch`: accelerate launch --config_file FILE -m "
                     "trl_r1.cli run RECIPE, or let trl-r1 launch it with --num_processes N")


def _add_card_argument(parser: argparse.ArgumentParser) -> None:
    from .trainers.speed import KNOWN_CARDS

    parser.add_argument("--card", metavar="NAME_OR_GB", help="with --dry-run: plan for this GPU instead of this "
                        "machine's: a size in GB (--card 24) or a name (--card h100; known: "
                        f"{', '.join(KNOWN_CARDS)}). The memory model checks each stage against it, the times use its "
                        "measured rates; on a machine without a GPU, what this one lacks (the GPU for bf16, vLLM) is a "
                        "note, not an error")


def _card(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, float] | None:
    """`--card`'s (name, GB), or None; a usage error (exit 2) for a bad value or without --dry-run."""
    from .trainers.speed import parse_card

    if args.card is None:
        return None
    if not args.dry_run:
        parser.error("--card plans a run for another GPU: use it with --dry-run")
    try:
        return parse_card(args.card)
    except ValueError as exc:
        parser.error(str(exc))


def _checks_hardware(args: argparse.Namespace) -> bool:
    """Whether TRL's configs check this machine's hardware as they are built: not on a dry run, nor without a GPU,
    where they would refuse bf16 once per stage; the preflight says it once, with the fix
    (`preflight.precision_problems`)."""
    from .pipeline.preflight import card_memory_gb

    return not args.dry_run and card_memory_gb() is not None


def recipe_data(args: argparse.Namespace) -> dict[str, Any]:
    """The recipe mapping a `trl-r1 run` command line describes: the YAML, then `--set` overrides, then the
    whole-recipe transform of `--smoke` (so that it rehearses the recipe as overridden, and shrinks what an
    override made large: `--set rl.max_completion_length=4096` stays a CPU minute, `--set
    model.model_name_or_path=...` rehearses that model's shape), then `--run-dir`. The one place where a command
    line changes a recipe."""
    from .config import apply_override
    from .pipeline.recipe import RecipeError, read_yaml

    data = read_yaml(args.recipe)
    for item in args.set:
        apply_override(data, item, RecipeError)
    if getattr(args, "smoke", False):  # the whole-recipe transform: real shape, tiny widths, 1 step per stage
        from .pipeline.smoke import prepare_smoke

        data = prepare_smoke(data, args.run_dir or f"{str(data.get('run_dir', 'runs/recipe')).rstrip('/')}-smoke",
                             build=not getattr(args, "dry_run", False))
    elif args.run_dir:
        data["run_dir"] = args.run_dir
    return data


def publish_main(argv: list[str] | None = None) -> int:
    """`trl-r1 publish RECIPE --repo-id ID [--stage S] [--adapter [--base-model ID]] [--private] [--export-only]`:
    a run's model and its card to the Hub (trl_r1.pipeline.publish)."""
    parser = argparse.ArgumentParser(prog="trl-r1 publish", description="Push a run's final model (merged, or "
                                     "the LoRA adapter with its Hub base) with a model card stating the recipe, "
                                     "the stages and the held-out figures.")
    parser.add_argument("recipe", help="the recipe the run used (its run_dir holds the run)")
    parser.add_argument("--repo-id", required=True, help="Hub model repo, e.g. me/qwen2.5-1.5b-r1-math")
    parser.add_argument("--run-dir", help="override the recipe's run_dir, as for `trl-r1 run`")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="the overrides the run used (`trl-r1 run --set`), so that the card states them")
    parser.add_argument("--stage", help="publish this stage's model (default: the last finished one)")
    parser.add_argument("--adapter", action="store_true", help="publish the LoRA adapter alone (its base must be "
                        "a Hub model: see --base-model)")
    parser.add_argument("--base-model", help="the Hub id of the weights the adapter (or the run) started from")
    parser.add_argument("--private", action="store_true", help="create the repo private")
    parser.add_argument("--license", help="the card's license, a Hub license id (default: the base model's: "
                        "llama3.2 for Llama-3.2, qwen-research for Qwen2.5-3B, else apache-2.0)")
    parser.add_argument("--export-only", action="store_true", help="write the upload to <run_dir>/hub and stop")
    args = parser.parse_args(either_spelling(parser, argv))

    def work() -> None:
        import yaml

        from .data.hub import HubPublishError, model_license, upload_folder
        from .pipeline import StageError, load_recipe
        from .pipeline.publish import PublishError, export_model_for_hub
        from .pipeline.recipe import RecipeError

        data = recipe_data(args)
        recipe = load_recipe(data, check_hardware=False)
        recipe.source = Path(args.recipe)  # loaded from its mapping (after --set): the card names the file
        text = Path(args.recipe).read_text() if not args.set else yaml.safe_dump(data, sort_keys=False)
        try:
            export = export_model_for_hub(recipe, repo_id=args.repo_id, stage=args.stage, adapter=args.adapter,
                                          base_model=args.base_model, recipe_text=text,
                                          license=args.license or model_license(str(recipe.model.model_name_or_path)))
        except PublishError as exc:
            raise RecipeError([str(exc)], "cannot publish") from exc
        print(f"trl-r1 publish: the upload is ready in {export}")
        if not args.export_only:
            try:
                url = upload_folder(export, args.repo_id, repo_type="model", private=args.private,
                                    hint=f"the upload is ready in {export}",
                                    message="Upload model trained with trl-r1")
            except HubPublishError as exc:
                raise StageError(str(exc)) from exc
            print(f"trl-r1 publish: pushed to {url}")

    return _exit_code("trl-r1 publish", work)


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
    parser = stage_parser(command, stage)
    argv = either_spelling(parser, argv)
    args, rest = parser.parse_known_args(argv)
    card = _card(parser, args)
    if _should_relaunch(args):
        return relaunch([command, *_without_launch_arguments(argv)], args.num_processes)
    _setup_logging()

    def work() -> None:
        from .pipeline import load_recipe, run_recipe
        from .pipeline.recipe import RecipeError

        from .pipeline.preflight import run_dir_problems

        recipe, overridden = single_stage_recipe(command, stage, args, rest)
        output_dir = recipe["run_dir"]  # a file there is named as this command's key, before the recipe's checks
        if isinstance(output_dir, str) and run_dir_problems(output_dir, key="output_dir"):
            raise RecipeError(run_dir_problems(output_dir, key="output_dir"))
        if stage == "rl":
            algorithm = recipe[stage].setdefault("algorithm", command)
            if algorithm != command:
                message = f"{command}: algorithm {algorithm!r} contradicts the command; use `trl-r1 {algorithm}`"
                raise RecipeError([message])
        check_hub_push(command, recipe[stage])
        settings = recipe[stage]
        recipe = load_recipe(recipe, single_stage=True, check_hardware=_checks_hardware(args))
        warn_full_fine_tuning_rate(command, recipe.stages[0], lr_given="learning_rate" in settings)
        run_recipe(recipe, dry_run=args.dry_run, overridden=overridden, card=card)

    return _exit_code(f"trl-r1 {command}", work)


def check_hub_push(command: str, section: dict[str, Any]) -> None:
    """TRL's `push_to_hub: true` asks for a Hub repo and a token; without either, a ConfigError saying so now,
    before training, not TRL's error after it (`hub.push_problem`, the check `trl-r1 publish` makes)."""
    from .config import ConfigError
    from .data.hub import push_problem

    if not section.get("push_to_hub"):
        return
    if not section.get("hub_model_id"):
        raise ConfigError(["push_to_hub: true needs hub_model_id, the Hub repo to push to (e.g. --hub_model_id "
                           "me/my-model); or train without it and publish the model with its card: `trl-r1 publish` "
                           "(docs/howto_publish.md)"], "cannot push")
    problem = push_problem()
    if problem:
        raise ConfigError([f"push_to_hub: cannot push to {section['hub_model_id']!r}: {problem}; nothing was "
                           "trained"], "cannot push")


# LoRA's learning rate relative to full fine-tuning's: the LoRA paper's and TRL's PEFT examples' ~10x
LORA_LR_FACTOR = 10


def warn_full_fine_tuning_rate(command: str, plan: StagePlan, *, lr_given: bool) -> None:
    """One WARNING when a stage trains LoRA adapters (trl-r1's QLoRA default) at TRL's full fine-tuning
    learning rate because the user set none: the adapters would barely move. The rate is kept, as `trl
    sft|grpo` keeps it; the warning names the LoRA-typical value to set."""
    model = plan.model_args
    if lr_given or model is None or not model.use_peft:
        return
    rate = plan.config.learning_rate
    logging.getLogger("trl_r1").warning(
        "%s: LoRA adapters (use_peft, trl-r1's QLoRA default) at TRL's full fine-tuning learning rate %g, which "
        "moves adapters ~%dx too slowly; LoRA usually trains at ~%g: set --learning_rate %g (or use_peft: false "
        "for full fine-tuning)", command, rate, LORA_LR_FACTOR, rate * LORA_LR_FACTOR, rate * LORA_LR_FACTOR)


# TRL's script-argument names (trl.ScriptArguments, the grpo script's GRPOScriptArguments) that trl-r1 spells
# otherwise or does not support, with what each becomes here. Every other TRL key (trl.ModelConfig, the TRL
# configs, dataset_name / dataset_config / dataset_train_split) is a field of trl-r1's own classes already.
TRL_SCRIPT_KEYS: dict[str, str] = {
    "reward_funcs": "TRL's name for `rewards` (the grpo script's GRPOScriptArguments.reward_funcs)",
    "dataset_test_split": "held-out split of dataset_name: evaluates the model before and after the stage (the "
                          "pipeline's evaluation: pass@1 over k samples, pass@k; report.md)",
    "dataset_streaming": "accepted as false only: trl-r1 loads the dataset (TRL's default False)",
    "ignore_bias_buffers": "accepted as false only (TRL's default False; a DDP debugging switch)",
    "reward_model_name_or_path": "not supported: trl-r1 trains on verifiable rewards (`rewards`)",
}


def single_stage_recipe(command: str, stage: str, args: argparse.Namespace,
                        rest: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The one-stage recipe a `trl-r1 sft|grpo|ppo` command line describes: the flat YAML, then the flags, TRL's
    script-argument names translated (`TRL_SCRIPT_KEYS`); unknown keys stay in, for the recipe's checks to name.
    Also the keys the command line set, which the plan marks as overridden."""
    from .config import flag_overrides, given_values
    from .pipeline.recipe import RecipeError, flat_to_recipe, read_yaml

    problems: list[str] = []
    flat = _reward_funcs_as_rewards(read_yaml(args.config) if args.config else {}, command, stage, problems)
    given = {**given_values(args, exclude=("config", "dry_run", "card", "num_processes")),
             **flag_overrides(rest, RecipeError)}
    flat.update(_reward_funcs_as_rewards(given, command, stage, problems))  # the command line wins, as in TRL
    for key in ("dataset_streaming", "ignore_bias_buffers"):
        if flat.pop(key, False) not in (False, None):
            problems.append(f"{command}: key {key!r}: {TRL_SCRIPT_KEYS[key]}")
    if flat.pop("reward_model_name_or_path", None) is not None:
        problems.append(f"{command}: key 'reward_model_name_or_path': {TRL_SCRIPT_KEYS['reward_model_name_or_path']}")
    test_split = flat.pop("dataset_test_split", None)
    if problems:
        raise RecipeError(problems)
    recipe = flat_to_recipe(flat, stage)
    overridden = [("rewards" if key == "reward_funcs" else key) for key in given]
    if test_split is not None:
        section = recipe[stage]
        recipe["evaluation"] = {"dataset_split": str(test_split), **{
            key: section[key] for key in ("dataset_name", "dataset_config", "dataset_kwargs", "prompt_column",
                                          "solution_column") if key in section}}
    return recipe, overridden


def _reward_funcs_as_rewards(values: dict[str, Any], command: str, stage: str, problems: list[str]) -> dict[str, Any]:
    """One source's keys (the YAML, or the command line) with TRL's `reward_funcs` as trl-r1's `rewards`."""
    if "reward_funcs" not in values:
        return values
    if stage != "rl":
        problems.append(f"{command}: key 'reward_funcs' is for the RL commands (grpo, ppo)")
    elif "rewards" in values:
        problems.append(f"{command}: set either 'rewards' or TRL's 'reward_funcs', not both")
    else:
        values = {("rewards" if k == "reward_funcs" else k): v for k, v in values.items()}
    return values


def stage_parser(command: str, stage: str) -> argparse.ArgumentParser:
    """`trl-r1 sft|grpo|ppo`'s parser, as TRL's TrlParser builds one from its dataclasses: one `--KEY` per field of
    the stage's argument class, TRL config and trl.ModelConfig (+ trl-r1's fields), each with its help and the
    default the stage runs with; list fields take several values (`--reward_funcs format math`).

    TRL's HfArgumentParser does not fit as is: it fills every default in, where the recipe checks need the keys
    the user set, and the stage's classes share field names (`dataset_kwargs`), which it refuses. A key that is
    no field is left to the recipe checks, which name it with a close-match suggestion."""
    parser = argparse.ArgumentParser(
        prog=f"trl-r1 {command}", allow_abbrev=False,
        usage=f"trl-r1 {command} [--config YAML] [--dry-run [--card NAME_OR_GB]] [--num_processes N] "
              "[--KEY VALUE ...]",
        description=f"Run the {command} stage alone. The YAML is flat, as for `trl "
        f"{'grpo' if command == 'ppo' else command}`: trl.ModelConfig, the TRL config and the data keys in one "
        "namespace (QLoRA defaults as in recipes); any key can also be given as --KEY VALUE, which wins over the "
        "YAML. Defaults below are the ones the stage runs with.")
    parser.add_argument("--config", help="flat YAML with the stage's keys (output_dir is where it writes)")
    parser.add_argument("--dry-run", action="store_true", help="validate and print the plan, run nothing")
    _add_card_argument(parser)
    _add_launch_arguments(parser)
    from .config import add_field_arguments, command_line_value

    for title, fields, defaults in stage_fields(command, stage):
        add_field_arguments(parser.add_argument_group(title), fields, defaults)
    group = parser.add_argument_group("TRL script keys (trl.ScriptArguments, the grpo script's)")
    for key, help_ in TRL_SCRIPT_KEYS.items():
        if key == "reward_funcs" and stage != "rl":
            continue
        group.add_argument(f"--{key}", default=argparse.SUPPRESS, type=command_line_value,
                           nargs="+" if key == "reward_funcs" else None, help=help_.replace("%", "%%"),
                           metavar="NAME" if key == "reward_funcs" else None)
    return parser


def stage_fields(command: str, stage: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """(group title, fields, default per field) for each class a single-stage YAML sets, in the order the recipe
    reads them (a name in two classes belongs to the first). The defaults are read off a planned stage, so they
    are the ones it runs with (trl-r1's QLoRA and gradient-checkpointing defaults included)."""
    import warnings

    from .pipeline.recipe import PIPELINE_SET_KEYS, flat_to_recipe, load_recipe

    with warnings.catch_warnings():  # TRL's configs warn about their own deprecated fields; not the user's business
        warnings.simplefilter("ignore")
        flat = {"output_dir": "OUTPUT_DIR", "model_name_or_path": "MODEL", "dataset_name": "DATASET"}
        if stage == "rl":
            flat["algorithm"] = command
        plan = load_recipe(flat_to_recipe(flat, stage), single_stage=True, check_hardware=False).stages[0]
    hidden = (PIPELINE_SET_KEYS - {"output_dir", "model_name_or_path"}) | {"tiny", "adapter_handoff"}
    groups, seen = [], set(hidden)
    for title, obj in ((f"{type(plan.args).__name__} (data, rewards)", plan.args),
                       (f"{type(plan.config).__name__} (the TRL config)", plan.config),
                       (f"{type(plan.model_args).__name__} (trl.ModelConfig)", plan.model_args)):
        fields = [f for f in dataclasses.fields(obj) if f.init and f.name not in seen]
        seen.update(f.name for f in fields)
        defaults = {f.name: getattr(obj, f.name) for f in fields}
        for key in ("output_dir", "model_name_or_path", "dataset_name"):  # required: no placeholder as a default
            if key in defaults:
                defaults[key] = dataclasses.MISSING
        groups.append((title, fields, defaults))
    return groups


def _exit_code(prog: str, work: Callable[[], None]) -> int:
    """Run a command's work; a bad recipe exits 2 and a failed stage 1, each with one clear line on stderr."""
    from .config import ConfigError
    from .pipeline import StageError
    from .pipeline.interrupt import RunInterrupted
    from .pipeline.ranks import WorldSizeError, shut_down

    succeeded = False
    try:
        work()
        succeeded = True
    except ConfigError as exc:
        return _report_once(f"{prog}: {exc}", 2)
    except (StageError, WorldSizeError) as exc:
        return _report_once(f"{prog}: {exc}", 130 if isinstance(exc, RunInterrupted) else 1)
    except KeyboardInterrupt:  # outside a pipeline run (a builder, evaluate): the command's own line, no traceback
        return _report_once(f"{prog}: interrupted (Ctrl-C)", 130)
    finally:
        shut_down(succeeded=succeeded)
    return 0


# How long a rank other than 0 waits before it exits quietly with the error rank 0 prints (`_report_once`).
QUIET_RANK_GRACE_S = 3.0


def _report_once(message: str, code: int) -> int:
    """Print a recipe or stage error on rank 0 only: every rank raises the same one (the recipe is read alike, and
    `Ranks.on_main` broadcasts the main process's error), so the others exit with the same code quietly. They wait a
    moment first, so that the launcher, which stops every rank once one has exited, does not stop rank 0 unprinted;
    rank 0 stays as long after printing, so that a rank still joining the process group (TrainingArguments joins it
    while the recipe is read) is not cut off mid-connect and reported as a crash."""
    if int(os.environ.get("RANK", "0")) == 0:
        print(message, file=sys.stderr)
        if int(os.environ.get("WORLD_SIZE", "1")) == 1:
            return code
    time.sleep(QUIET_RANK_GRACE_S)
    return code


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


# --------------------------------------------------------------------------------------------- several processes


def _add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num_processes", "--num-processes", type=int, default=1, metavar="N",
                        help="run with N processes on this machine (re-launched through `accelerate launch`: DDP, "
                             "gloo on CPU when there is no GPU); training stages are data-parallel")


def _should_relaunch(args: argparse.Namespace) -> bool:
    if args.num_processes < 1:
        print(f"trl-r1: --num_processes must be >= 1, got {args.num_processes}", file=sys.stderr)
        raise SystemExit(2)
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
        arguments = ["--config_file", f.name, "-m", "trl_r1.cli", *command]
        print(f"trl-r1: launching {num_processes} processes ({'CPU, gloo' if use_cpu else 'GPUs, DDP'}): "
              f"accelerate launch {' '.join(arguments)}", file=sys.stderr)
        return launch_ranks(f"trl-r1 {command[0]}", arguments)
    finally:
        os.unlink(f.name)


def launch_ranks(prog: str, arguments: list[str]) -> int:
    """`accelerate launch ARGUMENTS` in this process, so that a failed rank ends in one line, not torchelastic's
    ChildFailedError traceback; returns the failed rank's exit code (2 for a recipe error, as with one process)."""
    from accelerate.commands.launch import launch_command, launch_command_parser
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    # its "failed (exitcode: N) local_rank: R" error line says what our one line says
    logging.getLogger("torch.distributed.elastic.multiprocessing.api").setLevel(logging.CRITICAL)
    os.environ[LAUNCHER_PID] = str(os.getpid())  # each rank dies with this process (`die_with_launcher`)
    try:
        launch_command(launch_command_parser().parse_args(arguments))
    except ChildFailedError as exc:
        return failed_ranks_exit_code(prog, exc.failures)
    return 0


def failed_ranks_exit_code(prog: str, failures: dict[int, ProcessFailure]) -> int:
    """The exit code of a launch whose ranks failed, after one line naming the rank (none when rank 0 printed a
    recipe error that every rank shares: `_report_once`)."""
    codes = {failure.exitcode for failure in failures.values()}
    if 0 in failures and codes == {failures[0].exitcode}:
        rank = 0  # every rank failed alike (a recipe or stage error printed by rank 0, or the same crash)
        if codes == {2}:
            return 2
    else:
        rank = min(failures, key=lambda r: failures[r].timestamp)  # the first to fail, the others followed it
    code = failures[rank].exitcode
    how = f"exit code {code}" if code > 0 else f"killed by {signal.Signals(-code).name}"
    print(f"{prog}: rank {rank} failed ({how}): see above", file=sys.stderr)
    return code if code > 0 else 1


def free_port() -> int:
    """A TCP port free on this machine now (so that two launches side by side do not collide on 29500)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
