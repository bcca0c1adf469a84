"""Each pipeline stage that starts a vLLM engine leaves nothing of it behind: a run whose rl stage (TRL colocate,
the LoRA adapter pushed), held-out evaluations and rejection sampling all generate with vLLM, in one process.

TRL's colocate engine makes every later engine in the process an in-process one, and vLLM's `EngineCore.__init__`
runs `gc.freeze()`: an engine nobody shuts down stays resident (`data.generation.shutdown_vllm_engine`). Here every
`vllm.LLM` start is watched: before it, no earlier engine (`LLM` or its `EngineCore`) may be reachable, no
engine-core thread or child process may run, and resident memory (RSS) may not have grown by more than
`RSS_TOLERANCE_MB` since the first engine started.

The suite runs vLLM 0.32, whose in-process client got a finalizer that shuts the engine down once nothing refers
to it (and then destroys torch's process group, which a multi-process run still needs); 0.22-0.31, the GPU range,
have none, so the watch detaches it and the test sees what those versions do. Without the shutdowns the engines
of every earlier stage are still reachable at each start, and RSS grows by 1.1, 2.1, 3.2, then 4.4 GB (each
engine keeps its `VLLM_CPU_KVCACHE_SPACE`, 1 GiB here); with them: 0.05, 0.08, 0.08, 0.27 GB (measured on CPU).
"""

import functools
import gc
import threading
import weakref

import psutil
import pytest

RSS_TOLERANCE_MB = 500  # a stage's own allocations (a trainer, datasets, allocator arenas); one engine: 1 GiB
TOY_PROMPTS = "trl_r1.toy.toy_reasoner:toy_prompts"  # problems the toy reasoner answers: some samples accepted


class EngineWatch:
    """What was alive and resident at each `vllm.LLM` start, and references to every engine started so far."""

    def __init__(self):
        self.engines: list[tuple[weakref.ref, weakref.ref]] = []  # (LLM, its in-process EngineCore)
        self.starts: list[dict] = []
        self.threads_before = {t.ident for t in threading.enumerate()}

    def before_start(self) -> None:
        gc.collect()
        self.starts.append({
            "alive": [i for i, (llm, core) in enumerate(self.engines) if llm() is not None or core() is not None],
            "rss_mb": psutil.Process().memory_info().rss / 2**20,
            "threads": sorted(t.name for t in threading.enumerate()
                              if t.ident not in self.threads_before and _started_by_vllm(t)),
            "children": [p.name() for p in psutil.Process().children(recursive=True) if "vllm" in p.name().lower()
                         or "EngineCore" in p.name()],
        })

    def started(self, llm) -> None:
        client = llm.llm_engine.engine_core
        finalizer = getattr(client, "_finalizer", None)
        if finalizer is not None:  # vLLM 0.32's; 0.22-0.31, the GPU range, have none: what they do is tested
            finalizer.detach()
        self.engines.append((weakref.ref(llm), weakref.ref(client.engine_core)))


def _started_by_vllm(thread: threading.Thread) -> bool:
    run = getattr(thread, "_target", None) or thread.run
    return (getattr(run, "__module__", None) or type(thread).__module__).startswith("vllm")


@pytest.fixture
def watched_engines(monkeypatch):
    import trl.generation.vllm_generation as vllm_generation
    from vllm import LLM

    watch = EngineWatch()
    start = LLM.__init__

    def watched_init(self, *args, **kwargs):
        watch.before_start()
        start(self, *args, **kwargs)
        watch.started(self)

    monkeypatch.setattr(LLM, "__init__", watched_init)
    # graph compilation costs minutes of start-up on CPU (the generation layer turns it off there itself)
    monkeypatch.setattr(vllm_generation, "LLM", functools.partial(LLM, enforce_eager=True))
    return watch


def test_each_vllm_engine_is_gone_before_the_next_stage_starts_one(vllm_reasoner, tmp_path, watched_engines):
    from trl_r1.pipeline import run_recipe
    from trl_r1.pipeline.stages import read_record

    engine = {"backend": "vllm", "vllm_max_model_length": 128}
    recipe = {
        "run_dir": str(tmp_path),
        "model": {"model_name_or_path": vllm_reasoner, "load_in_4bit": False, "dtype": "float32"},
        "training": {"use_cpu": True, "bf16": False, "report_to": "none", "disable_tqdm": True,
                     "save_strategy": "no", "seed": 0},
        "rl": {"dataset_name": TOY_PROMPTS, "rewards": ["format", "math"],
               "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
               "use_vllm": True, "vllm_mode": "colocate", "vllm_max_model_length": 128},
        "rejection_sampling": {"dataset_name": TOY_PROMPTS, "num_samples": 2, "max_new_tokens": 32, **engine},
        "evaluation": {"dataset_name": TOY_PROMPTS, "num_prompts": 4, "num_samples": 2,
                       "max_new_tokens": 8, "stages": ["base", "rl"], **engine},
    }
    run_recipe(recipe, echo=lambda _: None)
    watched_engines.before_start()  # the state after the last stage, as a fifth engine would find it
    starts = watched_engines.starts
    rl = read_record(tmp_path / "rl")
    print("per engine start:", [(s["alive"], round(s["rss_mb"]), s["threads"], s["children"]) for s in starts])

    # base evaluation, rl (TRL's colocated engine), rl evaluation, rejection sampling: each on vLLM
    assert len(starts) == 5 and rl.metrics["global_step"] == 2
    assert read_record(tmp_path / "rejection_sampling").status == "done"
    for i, start in enumerate(starts):
        assert start["alive"] == [], f"engine start {i}: engines {start['alive']} still reachable"
        assert start["threads"] == [] and start["children"] == [], f"engine start {i}: {start}"
    growth = [s["rss_mb"] - starts[0]["rss_mb"] for s in starts[1:]]
    assert max(growth) < RSS_TOLERANCE_MB, f"RSS growth since the first engine started (MB): {growth}"
