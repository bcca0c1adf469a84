"""The generation layer on the tiny model: batched transformers sampling (with a PEFT adapter on a 4-bit base)
and the OpenAI-compatible client against a real local HTTP server (n, reasoning field, retries, timeouts)."""

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from trl_r1.data.generation import (
    OpenAIGenerator,
    SamplingParams,
    TransformersGenerator,
    load_generator,
    resolve_backend,
    vllm_unsupported_reason,
)
from trl_r1.toy.openai_server import OpenAICompatibleServer

CHAT = [{"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture(scope="module")
def think_generator(tiny_think_model_dir):
    return TransformersGenerator(tiny_think_model_dir)


def test_transformers_generates_all_samples_of_a_batch_in_one_call(think_generator, monkeypatch):
    calls = []
    generate = think_generator.model.generate
    monkeypatch.setattr(think_generator.model, "generate", lambda **kw: calls.append(kw) or generate(**kw))
    params = SamplingParams(num_samples=4, max_new_tokens=12)
    out = think_generator.generate([CHAT, "What is 4 + 5? <think>", "no think here"], params, seed=0)
    assert len(calls) == 1 and calls[0]["input_ids"].shape[0] == 3
    assert [len(group) for group in out] == [4, 4, 4]
    # the tiny think template prefills <think> for chat prompts; plain prompts are used as they are
    assert [group[0].think_prefilled for group in out] == [True, True, False]
    for c in (c for group in out for c in group):
        assert c.finish_reason in ("stop", "length") and 1 <= c.num_tokens <= 12
        assert c.finish_reason == "stop" or c.num_tokens == 12


def test_transformers_sampling_is_seeded(think_generator):
    params = SamplingParams(num_samples=3, max_new_tokens=10)
    texts = lambda seed: [c.content for c in think_generator.generate([CHAT], params, seed=seed)[0]]
    assert texts(1) == texts(1)
    assert texts(1) != texts(2)
    greedy = SamplingParams(num_samples=2, max_new_tokens=10, temperature=0.0)
    a, b = think_generator.generate([CHAT], greedy, seed=0)[0]
    assert a.content == b.content


def test_peft_adapter_on_a_4bit_base(tiny_model_dir, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    model.save_pretrained(tmp_path / "adapter")
    adapted = TransformersGenerator(tiny_model_dir, adapter_path=str(tmp_path / "adapter"), load_in_4bit=True)
    assert adapted.model.base_model.model.is_loaded_in_4bit
    assert adapted.describe() == {"backend": "transformers", "model": tiny_model_dir,
                                  "adapter": str(tmp_path / "adapter"), "load_in_4bit": True,
                                  "fast_generation": False}
    out = adapted.generate([CHAT, CHAT], SamplingParams(num_samples=2, max_new_tokens=8), seed=0)
    assert [len(g) for g in out] == [2, 2] and all(c.num_tokens >= 1 for g in out for c in g)
    ids = adapted.tokenizer("What is 2 + 3?", return_tensors="pt")
    with torch.inference_mode():
        with_adapter = adapted.model(**ids).logits
        with adapted.model.disable_adapter():
            without = adapted.model(**ids).logits
    assert not torch.allclose(with_adapter, without, atol=1e-3)  # the adapter is applied on the 4-bit base


@pytest.fixture(scope="module")
def think_server(tiny_think_model_dir):
    with OpenAICompatibleServer(tiny_think_model_dir, reasoning_parser=True, model_name="tiny") as server:
        yield server


def test_openai_chat_reasoning_field_and_n(think_server):
    client = OpenAIGenerator(think_server.base_url, "tiny")
    out = client.generate([CHAT, CHAT], SamplingParams(num_samples=3, max_new_tokens=8), seed=0)
    assert [len(g) for g in out] == [3, 3]
    for c in out[0]:
        # the tiny template prefills <think> and the model rarely closes it in 8 tokens: the server's reasoning
        # parser puts everything up to </think> in reasoning_content, as vLLM's does
        assert c.reasoning and c.finish_reason in ("stop", "length")
    assert client.completion_tokens > 0


def test_openai_plain_prompt_uses_completions_endpoint(tiny_model_dir):
    with OpenAICompatibleServer(tiny_model_dir) as server:
        out = OpenAIGenerator(server.base_url, "tiny").generate(["What is 2 + 3?"], SamplingParams(2, 6), seed=0)
    assert len(out[0]) == 2 and all(c.reasoning is None and isinstance(c.content, str) for c in out[0])


def test_openai_retries_tops_up_capped_n_and_bounds_concurrency(tiny_model_dir):
    with OpenAICompatibleServer(tiny_model_dir, fail_first=2, max_n=2) as server:
        client = OpenAIGenerator(server.base_url, "tiny", max_concurrency=2, backoff_s=0.01)
        out = client.generate([CHAT] * 5, SamplingParams(num_samples=3, max_new_tokens=4), seed=0)
        assert [len(g) for g in out] == [3] * 5  # 2 + 1 per prompt: the client asks again for the rest
        assert server.requests_served == 10 and server.max_in_flight == 2


def test_openai_bad_request_skips_the_prompt_only(tiny_model_dir):
    with OpenAICompatibleServer(tiny_model_dir) as server:
        out = OpenAIGenerator(server.base_url, "tiny").generate([[], CHAT], SamplingParams(1, 4), seed=0)
    assert out[0] == [] and len(out[1]) == 1


class _Silent(BaseHTTPRequestHandler):
    def do_POST(self):
        time.sleep(2)

    def log_message(self, *args):
        pass


def test_openai_timeout_is_retried_then_raised():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = OpenAIGenerator(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", timeout_s=0.2,
                                 max_retries=1, backoff_s=0.01)
        start = time.perf_counter()
        with pytest.raises(RuntimeError, match="after 1 retries.*Timeout"):
            client.generate([CHAT], SamplingParams(1, 4), seed=0)
        assert time.perf_counter() - start < 2
    finally:
        server.shutdown()
        server.server_close()


def test_load_generator_validates_backend_options():
    with pytest.raises(ValueError, match="unknown generation backend"):
        load_generator("tgi", "m")
    with pytest.raises(ValueError, match="needs base_url"):
        load_generator("openai", "m")
    with pytest.raises(ValueError, match="serve the adapter"):
        load_generator("auto", "m", base_url="http://x/v1", adapter_path="a")
    if not __import__("importlib").util.find_spec("vllm"):  # tests/vllm_engine covers the other case
        with pytest.raises(ImportError, match=r"pip install -e \"\.\[vllm\]\""):
            load_generator("vllm", "m")
        assert resolve_backend("auto", model_name_or_path="m") == "transformers"
        assert "not installed" in vllm_unsupported_reason("m")


HOLD_LOCK = """import fcntl, sys, time
lock = open(sys.argv[1], "w")
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(600)
"""


def test_only_adapter_folders_whose_lock_nobody_holds_are_removed(tmp_path):
    """A live slot (here another process) holds its folder's lock: kept; a dead run's lock is free: removed."""
    import subprocess
    import sys

    from trl_r1.data.generation import remove_orphan_adapter_folders

    live, dead, other = tmp_path / "trl-r1-lora-live", tmp_path / "trl-r1-lora-dead", tmp_path / "someone-else"
    for folder in (live, dead, other):
        (folder / "v1").mkdir(parents=True)
    (tmp_path / "trl-r1-lora-dead.lock").touch()
    (tmp_path / "someone-else.lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path / "trl-r1-lora-live.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        remove_orphan_adapter_folders(str(tmp_path))
        assert (live / "v1").is_dir() and (tmp_path / "trl-r1-lora-live.lock").is_file()
        assert not dead.exists() and not (tmp_path / "trl-r1-lora-dead.lock").exists()
        assert (other / "v1").is_dir()
    finally:
        holder.kill()
        holder.wait()
    remove_orphan_adapter_folders(str(tmp_path))  # its holder died: now an orphan
    assert not live.exists() and (other / "v1").is_dir()


@pytest.mark.parametrize("short", ["no room", "filled meanwhile"])
def test_an_adapter_push_short_of_tmpfs_goes_to_the_temporary_folder_without_a_mount(tmp_path, monkeypatch, caplog,
                                                                                      short):
    """Issue 34: the push fallback, tested where `mount` is refused (tests/vllm_engine mounts a real small tmpfs):
    tmpfs too small for a version, or full by the time it is written (ENOSPC), sends the version to the temporary
    folder with a warning, and nothing is left in either folder on close."""
    import errno
    import logging
    import shutil
    import tempfile
    from collections import namedtuple
    from types import SimpleNamespace

    import torch
    from peft import LoraConfig

    import trl_r1.data.generation as generation

    shm, scratch = tmp_path / "shm", tmp_path / "tmp"
    shm.mkdir(), scratch.mkdir()
    monkeypatch.setattr(generation, "adapter_scratch_root", lambda: str(shm))
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(scratch))
    usage = namedtuple("usage", "total used free")
    room = 0 if short == "no room" else 1 << 30
    monkeypatch.setattr(shutil, "disk_usage",
                        lambda path: usage(1 << 30, 0, room if str(path).startswith(str(shm)) else 1 << 30))
    write = generation._write_adapter

    def write_or_fill(folder, tensors, peft_config):
        if folder.startswith(str(shm)):  # another process took the room between the check and the write
            os.makedirs(folder)
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(folder, tensors, peft_config)

    monkeypatch.setattr(generation, "_write_adapter", write_or_fill)
    engine = SimpleNamespace(llm_engine=SimpleNamespace(vllm_config=SimpleNamespace(
        lora_config=SimpleNamespace(lora_dtype=torch.bfloat16), model_config=SimpleNamespace(dtype=torch.bfloat16))))
    slot = generation.VLLMAdapterSlot(engine)
    tensors = {"base_model.model.q_proj.lora_A.weight": torch.ones(4, 8, dtype=torch.bfloat16)}
    slot.version, slot.bytes_written = 1, 64
    with caplog.at_level(logging.WARNING, logger="trl_r1"):
        folder = slot._write(tensors, LoraConfig(r=4, target_modules=["q_proj"]))
    assert folder.startswith(str(scratch)) and os.path.exists(os.path.join(folder, "adapter_model.safetensors"))
    assert "docker run --shm-size" in caplog.text
    assert not any(shm.rglob("*.safetensors"))  # the half-written version in tmpfs is gone
    slot.close()
    assert not any(scratch.rglob("*.safetensors"))
