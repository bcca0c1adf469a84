"""Every ```python and ```bash example in README.md and docs/*.md runs, so a documented example cannot rot.

How a block is run:

* ``python``: the blocks of one file run in order and share one namespace, like a notebook (a later block may use what an earlier one defined). A block holding ``>>>`` prompts is a doctest:
  plain lines before its first prompt are run as setup, then every example's output is compared.
* ``bash`` / ``sh`` / ``shell``: each block runs alone under ``bash -e -o pipefail`` with a time limit; processes
  it leaves in the background are killed with its process group.
* Both run in a scratch directory that links the repository's top-level entries (so ``recipes/...`` resolves and
  outputs such as ``runs/`` or ``out/`` land in the scratch directory), with ``PYTHONPATH`` on this tree and the
  Hub offline.

Markers, an HTML comment on the line before the opening fence (invisible on GitHub and the Hub):

* ``<!-- skip: needs a GPU -->`` / ``<!-- skip: needs the Hub -->``: not run, only checked: a Python block must
  compile and its import statements must run (so a renamed export still fails here); a shell block must parse
  (``bash -n``). Only a GPU or the Hub is a reason to skip (``SKIP_REASONS``), besides set-up commands:
  ``<!-- skip: runs in CI itself -->`` for the README's ``bash scripts/main.sh`` / ``bash scripts/test.sh`` (CI runs
  them; test.sh would run this suite inside itself) and ``<!-- skip: installs packages -->`` for ``pip install``
  steps; a block under either holds those commands and nothing else.
* ``<!-- slow -->``: run with the ``slow`` pytest marker and a longer time limit (CI still runs it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BASH_TIMEOUT_S, SLOW_TIMEOUT_S, PYTHON_TIMEOUT_S = 120, 600, 600
_FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*(?P<kind>skip|slow)\b:?\s*(?P<reason>.*?)\s*-->\s*$")
_LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}

# The only reasons a block may be skipped, and the commands the last two may cover (every line of the block must be
# one): "runs in CI itself" for the README's set-up commands, which CI runs (scripts/test.sh would run this suite
# inside itself); "installs packages" for installation steps, which would change the environment under test.
SKIP_REASONS = ("needs a GPU", "needs the Hub", "runs in CI itself", "installs packages")
_SETUP_COMMANDS = {
    "runs in CI itself": re.compile(r"^bash scripts/(main|test)\.sh(\s|$)"),
    "installs packages": re.compile(r"^(pip3? (install|uninstall) |python3? -m venv |(\.|source) \S+/bin/activate$)"),
}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip: str | None  # the reason, when marked skip
    slow: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The python and shell blocks of a Markdown file, with the marker on the line before each fence."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        language = _LANGUAGES.get(match["lang"].lower())
        if language is None:
            continue
        line = text.count("\n", 0, match.start()) + 1
        previous = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(previous)
        skip = marker["reason"] or "marked skip" if marker and marker["kind"] == "skip" else None
        code = textwrap.dedent(match["body"])
        found.append(Block(path, line, language, code, skip, bool(marker and marker["kind"] == "slow")))
    return found


ALL_BLOCKS = [block for path in DOCS for block in blocks(path)]


def _params(language: str):
    for block in ALL_BLOCKS:
        if block.language != language:
            continue
        marks = [pytest.mark.slow] if block.slow else []
        yield pytest.param(block, id=block.id, marks=marks)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A working directory that sees the repository's files but keeps what examples write out of the tree."""
    directory = tmp_path_factory.mktemp("docs")
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in ("runs", "out"):
            (directory / entry.name).symlink_to(entry)
    return directory


def _env() -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
                PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))


# --- python: one interpreter per file, blocks in order, one namespace -----------------------------------------

_RUNNER = r'''
import ast, doctest, json, sys, traceback

def imports_only(code):
    tree = ast.parse(code)
    tree.body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return compile(tree, "<imports>", "exec")

def check_skipped(block, namespace):
    """Compile the block and run its imports only."""
    if ">>>" not in block["code"]:
        compile(block["code"], block["id"], "exec")
        exec(imports_only(block["code"]), namespace)
        return None
    for example in doctest.DocTestParser().get_examples(block["code"]):
        compile(example.source, block["id"], "exec")
        exec(imports_only(example.source), namespace)
    return None

def run(block, namespace):
    if ">>>" not in block["code"]:
        exec(compile(block["code"], block["id"], "exec"), namespace)
        return None
    setup = block["code"].split(">>>", 1)[0]  # plain code before the first prompt is setup
    exec(compile(setup, block["id"], "exec"), namespace)
    test = doctest.DocTestParser().get_doctest(block["code"], namespace, block["id"], block["id"], block["line"])
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append, clear_globs=False)
    return "".join(report) if runner.failures else None

outcomes = []
for blocks in json.load(open(sys.argv[1])):  # [[block, ...] per file]: one namespace per file, one interpreter
    namespace = {"__name__": "__main__"}
    for block in blocks:
        try:
            outcomes.append(check_skipped(block, namespace) if block["skip"] else run(block, namespace))
        except BaseException:
            outcomes.append(traceback.format_exc(limit=-4))
print("\n@@OUTCOMES@@" + json.dumps(outcomes))
'''


@pytest.fixture(scope="module")
def python_outcomes(scratch) -> dict[str, str | None]:
    """Run every file's python blocks (one interpreter for all files) and return, per block id, None or the failure."""
    runner, spec = scratch.parent / "docs_runner.py", scratch.parent / "blocks.json"
    runner.write_text(_RUNNER)
    files = [[b for b in blocks(path) if b.language == "python"] for path in DOCS]
    files = [file_blocks for file_blocks in files if file_blocks]
    every = [b for file_blocks in files for b in file_blocks]
    spec.write_text(json.dumps([[{"id": b.id, "line": b.line, "code": b.code, "skip": b.skip} for b in f] for f in files]))
    try:
        result = subprocess.run([sys.executable, str(runner), str(spec)], cwd=scratch, env=_env(),
                                capture_output=True, text=True, timeout=PYTHON_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {b.id: f"the python blocks ran over {PYTHON_TIMEOUT_S}s" for b in every}
    if "@@OUTCOMES@@" not in result.stdout:
        return {b.id: f"the interpreter died: {result.stderr[-3000:]}" for b in every}
    return dict(zip((b.id for b in every), json.loads(result.stdout.rsplit("@@OUTCOMES@@", 1)[1])))


@pytest.mark.parametrize("block", list(_params("python")))
def test_python_example_runs(block, python_outcomes):
    failure = python_outcomes[block.id]
    assert failure is None, f"{block.id} ({'skipped: ' + block.skip + '; imports' if block.skip else 'ran'}):\n{failure}"


# --- bash: each block alone, with a time limit ----------------------------------------------------------------


@pytest.mark.parametrize("block", list(_params("bash")))
def test_shell_example_runs(block, scratch):
    syntax = subprocess.run(["bash", "-n", "-c", block.code], capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block.id} does not parse:\n{syntax.stderr}"
    if block.skip:  # not run: at least the package modules it names must exist (`-m trl_r1.cli`)
        for module in re.findall(r"-m\s+(trl_r1(?:\.\w+)*)", block.code):
            assert importlib.util.find_spec(module), f"{block.id}: no module {module}"
        return
    timeout = SLOW_TIMEOUT_S if block.slow else BASH_TIMEOUT_S
    log = scratch.parent / f"{block.id.replace('/', '_')}.log"
    with open(log, "w") as out:  # a file, not a pipe: a server left in the background must not hold the test open
        process = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=scratch, env=_env(),
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=timeout)
            over = ""
        except subprocess.TimeoutExpired:
            over = f"ran over {timeout}s (mark it <!-- slow --> if it must take that long)\n"
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # and whatever it left in the background (servers started with &)
            except ProcessLookupError:
                pass
            process.wait()
    output = over + log.read_text(errors="replace")
    assert not over and process.returncode == 0, f"{block.id} failed (exit {process.returncode}):\n{output[-4000:]}"


# --- the harness itself ----------------------------------------------------------------------------------------


def skip_problem(block: Block) -> str | None:
    """Why the block's skip marker is not accepted, or None."""
    if not block.skip.startswith(SKIP_REASONS):
        return f"skip reason {block.skip!r} is none of {SKIP_REASONS}"
    for reason, command in _SETUP_COMMANDS.items():
        if block.skip.startswith(reason):
            lines = [line.split(" #", 1)[0] for line in block.code.splitlines() if not line.lstrip().startswith("#")]
            commands = [part.strip() for line in lines for part in line.split("&&")]
            others = [c for c in commands if c and (not command.match(c) or re.search(r"[;&|`]|\$\(", c))]
            if block.language != "bash" or others:
                return f"not covered by {reason!r}: {others or block.language}"
    return None


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in ALL_BLOCKS if b.skip])
def test_skips_name_an_accepted_reason(block):
    """Only a GPU or the Hub excuses an example, besides set-up commands, which must be nothing else."""
    assert skip_problem(block) is None, f"{block.id}: {skip_problem(block)}"


def test_skip_reasons_are_checked():
    def block(skip, code, language="bash"):
        return Block(ROOT / "README.md", 1, language, code, skip, False)

    assert skip_problem(block("needs a GPU (8 x H100)", "trl-r1 run big.yaml\n")) is None
    assert skip_problem(block("runs in CI itself", "bash scripts/main.sh   # main job\nbash scripts/test.sh\n")) is None
    assert skip_problem(block("installs packages", "python3 -m venv v\n. v/bin/activate\npip install -e .\n")) is None
    assert "none of" in skip_problem(block("too slow", "trl-r1 run recipes/tiny/pipeline.yaml\n"))
    assert "trl-r1 run x.yaml" in skip_problem(block("runs in CI itself", "bash scripts/main.sh\ntrl-r1 run x.yaml\n"))
    assert "train.py" in skip_problem(block("installs packages", "pip install x && python train.py\n"))
    assert "import os" in skip_problem(block("installs packages", "import os\n", language="python"))


def test_markers_and_block_discovery(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- skip: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n"
        "<!-- slow -->\n```sh\necho hi\n```\n\n```yaml\na: 1\n```\n\n- item\n\n  ```python\n  y = 2\n  ```\n"
    )
    found = blocks(doc)
    assert [(b.language, b.line, b.skip, b.slow, b.code) for b in found] == [
        ("python", 3, None, False, "x = 1\n"),
        ("bash", 8, "needs a GPU", False, "nvidia-smi\n"),
        ("bash", 13, None, True, "echo hi\n"),
        ("python", 23, None, False, "y = 2\n"),
    ]


def test_skipped_python_blocks_still_import(tmp_path):
    """A skipped block's imports run: the README's `from trl_r1.rewards import ...` ImportError is caught."""
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([[
        {"id": "a", "line": 1, "code": "from trl_r1.rewards import no_such_reward\nmodel.train()\n", "skip": "needs a GPU"},
        {"id": "b", "line": 5, "code": "import json\n>>> json.dumps(1)\n'2'\n", "skip": None},
        {"id": "c", "line": 9, "code": "total = 1 +\n", "skip": "needs the Hub"},
        {"id": "d", "line": 12, "code": ">>> json.loads('[1]')\n[1]\n", "skip": None},
    ], [
        {"id": "e", "line": 1, "code": ">>> json\n", "skip": None},
    ]]))
    runner = tmp_path / "runner.py"
    runner.write_text(_RUNNER)
    result = subprocess.run([sys.executable, str(runner), str(spec)], env=_env(), capture_output=True, text=True,
                            timeout=120)
    outcomes = json.loads(result.stdout.rsplit("@@OUTCOMES@@", 1)[1])
    assert "ImportError" in outcomes[0] and "no_such_reward" in outcomes[0]
    assert "Expected:\n    '2'\nGot:\n    '1'" in outcomes[1]
    assert "SyntaxError" in outcomes[2]
    assert outcomes[3] is None  # doctests share the file's namespace (json imported by block b)
    assert "NameError" in outcomes[4]  # ... and only that file's


# --- every command-line flag and config key a doc names exists ---------------------------------------------------

NAMING_DOCS = [*DOCS, ROOT / "recipes" / "README.md"]
_COMMAND = re.compile(r"(?:trl-r1|-m trl_r1\.cli)\s+(?P<command>[a-z][\w-]*)(?P<rest>(?:\\\n|[^\n`#|;&])*)")
_FLAG = re.compile(r"(?<![\w-])--(?P<flag>[A-Za-z][\w-]*)")
_SECTIONS = ("model", "training", "cold_start", "rl", "rejection_sampling", "final_sft", "evaluation")
_DOTTED_KEY = re.compile(r"(?:`|--set )(?P<section>" + "|".join(_SECTIONS) + r")\.(?P<key>[a-z_0-9]+)\b")


def named_flags() -> dict[str, set[tuple[str, str]]]:
    """command -> {(flag, where)} for every `trl-r1 <command> ... --flag` in the docs (continued lines included)."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in NAMING_DOCS:
        text = path.read_text(encoding="utf-8")
        for match in _COMMAND.finditer(text):
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            for flag in _FLAG.finditer(match["rest"]):
                found.setdefault(match["command"], set()).add((flag["flag"], where))
    return found


def command_options(command: str) -> set[str]:
    """The options `trl-r1 <command> --help` lists."""
    import contextlib
    import io

    from trl_r1.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([command, "--help"])
    return {m["flag"] for m in _FLAG.finditer(out.getvalue())}


def test_every_cli_flag_a_doc_names_exists():
    from trl_r1.cli import COMMANDS

    flags = named_flags()
    assert {"run", "grpo", "evaluate", "publish", "rejection-sample"} <= set(flags)  # the scan finds the commands
    unknown = [f"{where}: trl-r1 {command} has no --{flag}" for command, named in sorted(flags.items())
               if command in COMMANDS for flag, where in sorted(named) if flag not in command_options(command)]
    assert not [f"{command} (not a command)" for command in flags if command not in COMMANDS]
    assert not unknown


def _unknown_key_problems(recipe: dict) -> list[str]:
    from trl_r1.pipeline import RecipeError, load_recipe

    try:
        load_recipe(recipe, check_hardware=False)
    except RecipeError as exc:
        return [p for p in exc.problems if "unknown key" in p or "unknown section" in p]
    return []


def test_every_recipe_key_a_doc_names_exists():
    """`section.key` in text or `--set`, and the keys of every recipe-shaped YAML block, pass the recipe checks; a
    flat YAML block's keys are keys of some command (a single stage's, a builder's, `evaluate`'s)."""
    import yaml

    flat_keys = set().union(*(command_options(c) for c in ("sft", "grpo", "ppo", "rejection-sample", "distill",
                                                            "evaluate")))
    base = {"run_dir": "runs/check", "model": {"model_name_or_path": "m"}, "cold_start": {"dataset_name": "d"}}
    problems, checked = [], 0
    for path in NAMING_DOCS:
        text = path.read_text(encoding="utf-8")
        for match in _DOTTED_KEY.finditer(text):
            if match["key"] in ("png", "md", "json", "jsonl", "yaml", "py"):  # a file name (evaluation.png)
                continue
            section = dict(base.get(match["section"], {}))
            section[match["key"]] = None
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
            problems += [f"{where}: {p}" for p in _unknown_key_problems({**base, match["section"]: section})]
            checked += 1
        for block in re.finditer(r"^```ya?ml\n(?P<body>.*?)^```", text, re.M | re.S):
            try:
                data = yaml.safe_load(block["body"])
            except yaml.YAMLError:
                continue
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, block.start()) + 1}"
            if not isinstance(data, dict):
                continue
            checked += 1
            if not set(data) & set(_SECTIONS[2:]):  # a flat YAML (`--config`)
                problems += [f"{where}: no command has a key {key!r}" for key in data if key not in flat_keys]
                continue
            data = {k: {kk: vv for kk, vv in v.items() if kk != "..."} if isinstance(v, dict) else v
                    for k, v in data.items()}  # `model: {...}`: keys left out of the example
            recipe = {**base, **{k: v for k, v in data.items() if k != "cold_start"}}
            recipe["cold_start"] = {**base["cold_start"], **(data.get("cold_start") or {})}
            problems += [f"{where}: {p}" for p in _unknown_key_problems(recipe)]
    assert checked > 10 and not problems


def test_the_key_checks_catch_a_wrong_name():
    """The two checks above fail on what the issue found: a flag --help does not list, a key no section has."""
    assert "reward_funcs" in command_options("grpo") and "rewards" in command_options("grpo")
    assert "dataset_test_split" in command_options("grpo") and "not_a_flag" not in command_options("grpo")
    assert _unknown_key_problems({"run_dir": "r", "model": {"model_name_or_path": "m"},
                                  "evaluation": {"solution_column": "answr", "solutoin_column": "x"},
                                  "cold_start": {"dataset_name": "d"}}) == [
        "evaluation: unknown key 'solutoin_column'; did you mean 'solution_column'?"]
