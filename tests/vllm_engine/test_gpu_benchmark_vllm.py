"""benchmarks/gpu.py's vLLM pass on a real engine (CPU build): a recipe's LoRA rank that vLLM does not take as
`max_lora_rank` (it takes 1, 8, 16, 32, 64, ...) is rounded up to one it takes, and a 4-bit pass this vLLM cannot
serve is refused with the reason instead of being measured on another base."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _gpu_module():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vllm_pass_serves_a_lora_rank_vllm_does_not_list(vllm_model_dir):
    point = {"model_dir": vllm_model_dir, "load_in_4bit": False, "lora_r": 12, "vllm_gpu_memory_utilization": 0.5,
             "prompt_words": 8, "gen_tokens": 4, "sequences": 2}
    measured = _gpu_module().measure_vllm(point, [{"role": "user", "content": "seven seven"}])
    assert measured["backend"] == "vllm" and measured["generated_tokens_per_s"] > 0
    assert measured["sequences"] == 2 and measured["new_tokens"] == 4


def test_a_4bit_pass_vllm_cannot_serve_is_refused_with_the_reason(vllm_model_dir):
    point = {"model_dir": vllm_model_dir, "load_in_4bit": True, "lora_r": 16, "vllm_gpu_memory_utilization": 0.5,
             "prompt_words": 8, "gen_tokens": 4, "sequences": 2}
    with pytest.raises(RuntimeError, match="bitsandbytes 4-bit on CUDA only"):
        _gpu_module().measure_vllm(point, [{"role": "user", "content": "seven seven"}])
