"""The vLLM suite: runs only where vLLM is installed (`bash scripts/test_vllm.sh` builds that environment; the main
suite skips this folder). On CPU, vLLM starts in 3-5 s in-process with a small KV cache and no graph compilation;
its CPU attention needs a head dimension of at least 32, so the tiny model here has 2 heads of 32."""

import gc
import os

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process: fast start-up
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

import pytest  # noqa: E402

ENGINE = {"enforce_eager": True, "max_model_len": 512}


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory):
    """The tiny model with head_dim 32 (hidden 64, 2 heads), which vLLM's CPU attention accepts."""
    from trl_r1.toy import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-vllm"), hidden_size=64, num_heads=2))


@pytest.fixture(scope="session")
def vllm_reasoner(vllm_model_dir, tmp_path_factory):
    """The toy reasoner (a few SFT steps on toy sums) on the head_dim-32 tiny model."""
    from trl_r1.toy.toy_reasoner import build_toy_reasoner

    return str(build_toy_reasoner(tmp_path_factory.getbasetemp() / "toy-reasoner-vllm", vllm_model_dir))


def release(llm) -> None:
    """Free an engine so that the next one can start in this process."""
    from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel

    del llm
    destroy_model_parallel()
    destroy_distributed_environment()
    gc.collect()
