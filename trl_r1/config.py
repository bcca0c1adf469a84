"""The one config dialect of trl-r1: YAML files and ``--key value`` flags onto dataclasses, checked before work.

Recipes (`trl_r1.pipeline.recipe`), the single-stage commands and the dataset builders' commands
(`trl-r1 rejection-sample|distill`) all read their settings through this module, so a key means the same thing
and fails the same way everywhere: unknown keys are named with a close-match suggestion, values are checked
against the dataclass annotations (numeric strings become numbers, as YAML reads ``1e-5`` as text and TRL's
argparse would convert it), and every problem is collected before anything runs (`ConfigError`).

Overrides have one form, applied in one place (`apply_override`): ``SECTION.KEY=VALUE`` with the value parsed as
YAML, as in ``trl-r1 run recipe.yaml --set rl.learning_rate=1e-6``. Transforms of a whole recipe (a smoke-test
shortening, say) go through `trl_r1.cli.recipe_data`, the one function that turns a command line into the
recipe mapping. This module imports nothing from the package, so every layer may use it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import enum
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """Every problem found in a configuration, each naming where (section or stage) and the key."""

    def __init__(self, problems: list[str], title: str = "invalid configuration"):
        self.problems, self.title = problems, title
        super().__init__(f"{title}:\n" + "\n".join(f"  - {p}" for p in problems))

    def __reduce__(self):  # pickled whole (the pipeline sends a main-process error to the other ranks)
        return type(self), (self.problems, self.title)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader refusing a key given twice in one mapping (plain YAML keeps the last one silently, so a
    recipe's second `max_length:` would undo its first without a word)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice; keep one", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)


def read_yaml(path: str | Path, error: type[ConfigError] = ConfigError) -> dict[str, Any]:
    """A YAML file as a mapping (a clear error for a missing file, bad YAML or a non-mapping)."""
    path = Path(path)
    if path.is_dir():
        raise error([f"config file {str(path)!r} is a folder; give the YAML file in it"])
    if not path.is_file():
        raise error([f"config file {str(path)!r} not found"])
    try:
        data = yaml.load(path.read_text(encoding="utf-8-sig"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        tabs = " (YAML indents with spaces, not tabs)" if "'\\t'" in str(exc) else ""
        raise error([f"{path}: not valid YAML{tabs}: {' '.join(str(exc).split())}"]) from exc
    if not isinstance(data, dict):
        raise error([f"{path}: must be a mapping of keys, got {type(data).__name__}"])
    return data


def flag_overrides(tokens: list[str], error: type[ConfigError] = ConfigError) -> dict[str, Any]:
    """`--key value` pairs (values parsed as YAML; a bare `--flag` is true), as TRL's command lines.

    >>> flag_overrides(["--lora_r", "32", "--bf16", "--learning_rate", "1e-6"])
    {'lora_r': 32, 'bf16': True, 'learning_rate': '1e-6'}
    """
    out: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            raise error([f"unexpected argument {token!r}; overrides are --KEY VALUE"])
        key, _, inline = token[2:].partition("=")
        if inline:
            out[key], i = yaml.safe_load(inline), i + 1
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out[key], i = yaml.safe_load(tokens[i + 1]), i + 2
        else:
            out[key], i = True, i + 1
    return out


def apply_override(data: dict[str, Any], item: str, error: type[ConfigError] = ConfigError) -> None:
    """Apply one `SECTION.KEY=VALUE` (or `KEY=VALUE`) override to a raw config mapping.

    >>> recipe = {"rl": {"learning_rate": 1e-6}}
    >>> apply_override(recipe, "rl.max_steps=10"); recipe
    {'rl': {'learning_rate': 1e-06, 'max_steps': 10}}
    """
    path, sep, value = item.partition("=")
    section, dot, key = path.partition(".")
    if not sep or not section:
        raise error([f"--set {item!r}: expected SECTION.KEY=VALUE or KEY=VALUE"])
    if not dot:
        data[section] = yaml.safe_load(value)
        return
    if not isinstance(data.setdefault(section, {}), dict):
        raise error([f"--set {item!r}: section {section!r} is not a mapping"])
    data[section][key] = yaml.safe_load(value)


def parse_command_line(config_class: type, argv: list[str], prog: str) -> Any:
    """`--config file.yaml` plus `--field value` overrides onto one dataclass (the builders' commands).

    Raises ConfigError naming every unknown key and bad value; `--help` lists the fields with their help and
    default (`add_field_arguments`).
    """
    parser = argparse.ArgumentParser(prog=prog, allow_abbrev=False, description=config_class.__doc__,
                                     usage=f"{prog} [--config YAML] [--FIELD VALUE ...]")
    parser.add_argument("--config", help="YAML file with the settings; --FIELD VALUE flags win over it")
    fields = [f for f in dataclasses.fields(config_class) if f.init]
    add_field_arguments(parser.add_argument_group("fields"), fields, {f.name: field_default(f) for f in fields})
    args, rest = parser.parse_known_args(argv)
    values = read_yaml(args.config) if args.config else {}
    values.update(given_values(args, exclude=("config",)))
    values.update(flag_overrides(rest))
    problems: list[str] = []
    check_keys(prog, values, [config_class], problems)
    config = build(prog, config_class, values, problems) if not problems else None
    if problems:  # the caller prints `prog` once: "<prog>: invalid configuration: - <key>: ..."
        raise ConfigError([problem.removeprefix(f"{prog}: ") for problem in problems])
    return config


# --------------------------------------------------------------------------------------------- command lines


def add_field_arguments(parser: Any, fields: list[Any], defaults: dict[str, Any]) -> None:
    """One `--NAME` option per dataclass field, as TRL's HfArgumentParser declares them: the field's help with
    its default (`defaults[name]`; `dataclasses.MISSING`: required), several values for a list (`--rewards
    format math`), an optional value for a bool (`--bf16`, `--bf16 false`). Values are kept as given (YAML-read,
    text for a `str` field) and undeclared keys are left out of the namespace, so that the config checks
    (`check_keys`, `build`) see exactly what the user set."""
    for f in fields:
        default = defaults.get(f.name, dataclasses.MISSING)
        shown = "required" if default is dataclasses.MISSING else f"default: {_show_default(default)}"
        help_ = f"{f.metadata.get('help', '').strip()} ({shown})".replace("%%", "%").replace("%", "%%")
        options: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_, "metavar": f.name.upper(),
                                   "type": command_line_value}
        kind = _field_kind(f.type)
        if kind == "list":
            options["nargs"] = "+"
        elif kind == "bool":
            options.update(nargs="?", const=True, metavar="{true,false}")
        elif kind == "str":
            options["type"] = str
        if f.metadata.get("choices"):
            options["metavar"] = "{" + ",".join(map(str, f.metadata["choices"])) + "}"
        parser.add_argument(f"--{f.name}", **options)


def given_values(args: argparse.Namespace, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The options a command line set (`add_field_arguments` leaves the others out); a list given in its YAML
    form (`--rewards '[format, math]'`) is that list."""
    return {key: value[0] if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list) else value
            for key, value in vars(args).items() if key not in exclude}


def field_default(f: Any) -> Any:
    """A dataclass field's default (`dataclasses.MISSING` when it has none)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING


def command_line_value(token: str) -> Any:
    """A command-line value as YAML reads it (`1e-6` stays text, which `coerce` makes a number); 'None' is None,
    as for TRL's parser.

    >>> command_line_value("[format, math]"), command_line_value("None"), command_line_value("false")
    (['format', 'math'], None, False)
    """
    if token == "None":
        return None
    try:
        return yaml.safe_load(token)
    except yaml.YAMLError:
        return token


def _field_kind(annotation: Any) -> str:
    """'list', 'bool', 'str' or 'other' for a dataclass field's annotation (a type, or its text).

    >>> _field_kind("list[str] | None"), _field_kind(bool), _field_kind("str | None"), _field_kind(float | None)
    ('list', 'bool', 'str', 'other')
    """
    text = annotation if isinstance(annotation, str) else str(annotation)
    text = text.replace("typing.", "").replace("<class '", "").replace("'>", "")
    parts = {part.strip() for part in text.removeprefix("Optional[").removesuffix("]").split("|")} - {"None"}
    if any(part.startswith(("list", "List", "tuple", "Union[list")) for part in parts):
        return "list"
    return {frozenset({"bool"}): "bool", frozenset({"str"}): "str"}.get(frozenset(parts), "other")


def _show_default(value: Any) -> str:
    value = getattr(value, "value", value)  # enums (OptimizerNames, SchedulerType, ...)
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------------------------- keys and types


def fields_of(cls: type) -> list[str]:
    """The names a config file may set on `cls` (its init fields)."""
    return [f.name for f in dataclasses.fields(cls) if f.init]


def checkpointing_key(cls: type) -> str:
    """The name of a `TrainingArguments` subclass's gradient-checkpointing switch: transformers renamed
    `gradient_checkpointing` (5.17, the GPU machines' version) to `activation_checkpointing` (5.24 keeps the old
    name as an alias that warns)."""
    return "activation_checkpointing" if "activation_checkpointing" in fields_of(cls) else "gradient_checkpointing"


def pick(section: dict[str, Any], cls: type, exclude: list[str] = ()) -> dict[str, Any]:
    """The keys of `section` that `cls` has (minus `exclude`)."""
    names = set(fields_of(cls)) - set(exclude)
    return {k: v for k, v in section.items() if k in names}


# Keys of TRL's older configs and of open-r1's recipes (GRPOScriptArguments, SFTScriptArguments) that trl-r1
# spells otherwise or leaves to another place: what each becomes here. A close-match suggestion would mislead.
FOREIGN_KEYS: dict[str, str] = {
    "reward_funcs": "TRL's and open-r1's name for `rewards` (a list of names, or {name, weight} mappings)",
    "max_prompt_length": "TRL 1.16's GRPOConfig has none (GRPO no longer truncates prompts): drop it and keep "
                         "long prompts out of the dataset (filter them, or set max_samples)",
    "max_seq_length": "TRL's old name for `max_length` (SFTConfig, renamed in TRL 0.20)",
    "dataset_test_split": "TRL's held-out split key (`trl-r1 grpo|sft` take it): in a recipe the held-out set is the "
                          "`evaluation:` section (dataset_name, dataset_split: test, stages: [...])",
    "evaluation_strategy": "transformers' old name for `eval_strategy`",
    "warmup_ratio": "transformers 4's share of steps spent warming up, gone in transformers 5: set `warmup_steps` "
                    "(a count of steps, or a float below 1 read as that share of the steps)",
    "dataset_prompt_column": "open-r1's name for `prompt_column`",
    "dataset_mixture": "open-r1's mixture: here `final_sft.mix_datasets` (trl DatasetConfig entries)",
    "system_prompt": "open-r1's system prompt: put a system turn in the dataset's prompt (a `prompt` column of "
                     "{role, content} turns), see docs/howto_dataset.md",
    "chat_template": "open-r1's inline template: an SFT stage takes `chat_template_path` (a .jinja file); for the "
                     "others put the template in the model's tokenizer_config.json",
    "benchmarks": "open-r1's benchmark list: here the `evaluation` section, or `trl-r1 evaluate --benchmark NAME`",
    "callbacks": "open-r1's callbacks are not supported; the pipeline logs, checkpoints and evaluates each stage",
    "vllm_device": "TRL's old vLLM placement: here `vllm_mode: colocate` (one GPU) or `server`",
    "use_liger": "TRL's old name for `use_liger_kernel`",
    "hub_model_revision": "open-r1's Hub revision: publish a finished run with `trl-r1 publish --repo-id ID`",
    "push_to_hub_revision": "open-r1's Hub revision: publish a finished run with `trl-r1 publish --repo-id ID`",
    "overwrite_hub_revision": "open-r1's Hub revision: publish a finished run with `trl-r1 publish --repo-id ID`",
    "wandb_entity": "open-r1's W&B settings: set the WANDB_ENTITY environment variable and report_to: wandb",
    "wandb_project": "open-r1's W&B settings: set the WANDB_PROJECT environment variable and report_to: wandb",
    "wandb_run_group": "open-r1's W&B settings: set the WANDB_RUN_GROUP environment variable and report_to: wandb",
    "code_language": "open-r1's code reward option: here an option of the reward entry, "
                     "{name: code, ...} (docs/code_reward.md)",
    "code_provider": "open-r1's sandbox choice: trl-r1's code reward runs programs locally in bubblewrap "
                     "(docs/code_reward.md)",
    "e2b_router_url": "open-r1's E2B sandbox: trl-r1's code reward runs programs locally in bubblewrap "
                      "(docs/code_reward.md)",
    "morph_router_url": "open-r1's Morph sandbox: trl-r1's code reward runs programs locally in bubblewrap "
                        "(docs/code_reward.md)",
    "parallel_code_exec_per_proc": "open-r1's code-execution setting: trl-r1's code reward sets its own "
                                   "parallelism (docs/code_reward.md)",
    **{key: "open-r1's options of its cosine length reward, which trl-r1 does not provide (write one: "
            "docs/howto_reward.md)" for key in ("cosine_min_value_wrong", "cosine_max_value_wrong",
                                                 "cosine_min_value_correct", "cosine_max_value_correct",
                                                 "cosine_max_len")},
    **{key: "open-r1's options of its repetition penalty, which trl-r1 does not provide (write one: "
            "docs/howto_reward.md)" for key in ("repetition_n_grams", "repetition_max_penalty")},
    **{key: "open-r1's overlong punishment options: trl-r1 has no such reward; mask_truncated_completions: true "
            "drops truncated completions from the loss" for key in ("max_completion_len", "soft_punish_cache")},
}


def check_keys(where: str, section: dict[str, Any], classes: list[type], problems: list[str]) -> None:
    """Add a problem for every key none of `classes` has: what it is here when it is TRL's or open-r1's name
    (`FOREIGN_KEYS`), else a close-match suggestion."""
    allowed = sorted({name for cls in classes for name in fields_of(cls)})
    for key in section:
        if key not in allowed:
            hint = f": {FOREIGN_KEYS[key]}" if key in FOREIGN_KEYS else suggest(str(key), allowed)
            problems.append(f"{where}: unknown key {key!r}{hint}")


def suggest(key: str, candidates: Any) -> str:
    """'; did you mean ...?' for the closest candidate, else ''."""
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.7)
    return f"; did you mean {close[0]!r}?" if close else ""


def build(where: str, cls: type, values: dict[str, Any], problems: list[str], check_hardware: bool = True,
          unchecked: tuple[str, ...] = ("rewards",)) -> Any:
    """Type-check `values` against `cls`'s annotations, then construct it (its own checks name `where`).

    Keys in `unchecked` pass as they are (reward lists are checked by resolving them). With
    `check_hardware=False`, configs with a `use_cpu` field are built as if it were set (TRL's configs refuse
    bf16 without a GPU), and the flag is restored afterwards: a GPU recipe validates on a CPU-only machine.
    """
    hints = _type_hints(cls)
    coerced, ok = {}, True
    for key, value in values.items():
        try:
            coerced[key] = value if key in unchecked else coerce(value, hints.get(key, Any))
        except TypeError as exc:
            problems.append(f"{where}: key {key!r}: {exc}")
            ok = False
    if not ok:
        return None
    hardware_free = not check_hardware and "use_cpu" in fields_of(cls)
    try:
        if hardware_free:
            built = cls(**{**coerced, "use_cpu": True})
            built.use_cpu = coerced.get("use_cpu", False)
            return built
        return cls(**coerced)
    except (ValueError, TypeError) as exc:
        hint = _batch_hint(str(exc), values)
        problems.append(f"{where}: {str(exc).rstrip('.') if hint else exc}{hint}")
        return None


def _batch_hint(message: str, values: dict[str, Any]) -> str:
    """What TRL's batch check means in the keys a recipe sets: `generation_batch_size` is a product the user rarely
    sets, so the fix names its factors."""
    if "generation_batch_size" not in message or "generation_batch_size" in values:
        return ""
    return ("; generation_batch_size is per_device_train_batch_size x processes (--num_processes) x "
            "steps_per_generation (default gradient_accumulation_steps): set per_device_train_batch_size to a "
            "multiple of num_generations, or change num_generations")


def _type_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError):  # an unresolvable forward reference: no type checks
        return {}


def coerce(value: Any, annotation: Any) -> Any:
    """`value` checked against a dataclass annotation; numeric strings become numbers (YAML reads 1e-5 as text).

    >>> coerce("1e-5", float), coerce(3, float | None), coerce("cosine", Literal["linear", "cosine"])
    (1e-05, 3.0, 'cosine')
    >>> from transformers.trainer_utils import SaveStrategy
    >>> coerce(False, SaveStrategy | str)  # `save_strategy: no`, unquoted
    'no'
    >>> coerce("yes", bool)
    Traceback (most recent call last):
    ...
    TypeError: expected bool, got 'yes' (str)
    """
    if annotation is Any or annotation is None:
        return value
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in sorted((o for o in options if o is not type(None)), key=_union_order):
            try:
                return coerce(value, option)
            except TypeError as exc:
                errors.append(str(exc))
        raise TypeError(errors[0] if len(errors) == 1 else f"expected {_type_name(annotation)}, got {_show(value)}")
    if origin is Literal:
        if value in typing.get_args(annotation):
            return value
        raise TypeError(f"expected one of {list(typing.get_args(annotation))}, got {_show(value)}")
    if origin in (list, tuple) or annotation in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list, got {_show(value)}")
        args = typing.get_args(annotation)
        item = args[0] if args else Any
        return [coerce(v, item) for v in value]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected a mapping, got {_show(value)}")
        return value
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise TypeError(f"expected bool, got {_show(value)}")
    if annotation in (int, float):
        if isinstance(value, bool):
            raise TypeError(f"expected {annotation.__name__}, got {_show(value)}")
        if isinstance(value, (int, float)) and (annotation is float or float(value).is_integer()):
            return annotation(value)
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
            else:
                if annotation is float or number.is_integer():
                    return annotation(number)
        raise TypeError(f"expected {annotation.__name__}, got {_show(value)}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise TypeError(f"expected str, got {_show(value)}")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        allowed = [m.value for m in annotation]
        if value is False and "no" in allowed:  # YAML 1.1 reads an unquoted `save_strategy: no` as false
            return "no"
        if value in allowed or isinstance(value, annotation):
            return value
        raise TypeError(f"expected one of {allowed}, got {_show(value)}")
    return value  # other annotations (classes, callables): the config's own __post_init__ checks them


def counted(number: int, noun: str) -> str:
    """`number` and `noun`, plural unless it is one (the count lines users read: "1 prompt", "3 prompts").

    >>> counted(1, "prompt"), counted(0, "sample"), counted(1234, "row")
    ('1 prompt', '0 samples', '1,234 rows')
    """
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _union_order(option: Any) -> int:
    """Try the strictest types first, so '3' for `int | str` becomes 3 but 'cosine' stays a string."""
    return {bool: 0, int: 1, float: 2}.get(option, 4 if option is str else 3)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _show(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"
