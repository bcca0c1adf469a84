"""`trl-r1` command line: the R1 pipeline (`run`) and each stage alone.

Each subcommand lives with the code it drives; this module only dispatches, importing the heavy modules
when a command is chosen so that `trl-r1 --help` stays instant.
"""

from __future__ import annotations

import importlib
import sys

# command -> ("module:function", help). Each function takes the remaining argv and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("trl_r1.pipeline:main", "run a recipe YAML: cold-start SFT -> GRPO/PPO -> rejection sampling -> SFT"),
    "sft": ("trl_r1.pipeline:sft_main", "run the SFT stage alone (--config stage.yaml, TRL-style flat YAML works)"),
    "grpo": ("trl_r1.pipeline:grpo_main", "run the GRPO stage alone (trl-r1's R1GRPOTrainer)"),
    "ppo": ("trl_r1.pipeline:ppo_main", "run the PPO stage alone (actor-critic with GAE)"),
    "rejection-sample": ("trl_r1.data.rejection_sampling:main", "sample k per prompt, keep verified traces"),
    "distill": ("trl_r1.data.distillation:main", "teacher traces -> verified <think> SFT dataset"),
    "tiny-model": ("trl_r1.testing.tiny:main", "build the tiny offline model + tokenizer used by demos and tests"),
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
    module, _, func = COMMANDS[command][0].partition(":")
    return int(getattr(importlib.import_module(module), func)(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
