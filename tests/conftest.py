import importlib.util
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# (not named tests/vllm: scripts run from tests/ would import that folder as the vllm package)
# tests/vllm_engine needs vLLM, which the main environment does not install: scripts/test_vllm.sh runs it in its own
collect_ignore = [] if importlib.util.find_spec("vllm") else ["vllm_engine"]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny Qwen2-style model + tokenizer saved to disk (built once per test session)."""
    from trl_r1.toy import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-model")))


@pytest.fixture(scope="session")
def tiny_think_model_dir(tmp_path_factory):
    """The tiny model with a chat template that prefills `<think>`."""
    from trl_r1.toy import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-think-model"), prefill_think=True))


@pytest.fixture(scope="session")
def smoke_work_dir(tmp_path_factory):
    """Where `--smoke` runs build their rehearsed real-shape models and dataset mirrors (shared by the session)."""
    return tmp_path_factory.mktemp("smoke-work")
