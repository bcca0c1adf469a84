"""A small OpenAI-compatible server for a local model: a real HTTP teacher for tests and offline demos.

Standard library `http.server` in front of trl-r1's transformers generation backend. It implements what the
dataset builders use from `vllm serve`: `POST /v1/chat/completions` and `POST /v1/completions` with `n`,
`temperature`, `top_p`, `max_tokens` and `seed`, `usage` counts, and `GET /v1/models`. With
`reasoning_parser=True` it splits the reasoning into `message.reasoning_content` like vLLM's `deepseek_r1`
reasoning parser (the text before ``</think>``; all of it when ``</think>`` never came). `fail_first=N` answers
the first N generation requests with HTTP 503 and `max_n` caps the choices per request (as some servers do),
to exercise clients' retries and top-ups.

    python -m trl_r1.toy.openai_server MODEL_DIR --port 8000 [--reasoning-parser]
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..verifiers.format import THINK_CLOSE, THINK_OPEN


class OpenAICompatibleServer:
    """Serve `model_dir` on `http://host:port/v1` from a background thread (port 0 picks a free one).

    Use as a context manager; `base_url` is the API root, `max_in_flight` the most requests seen at once.
    """

    def __init__(self, model_dir: str, host: str = "127.0.0.1", port: int = 0, reasoning_parser: bool = False,
                 fail_first: int = 0, max_n: int | None = None, model_name: str | None = None):
        from ..data.generation import TransformersGenerator

        self.generator = TransformersGenerator(model_dir)
        self.model_name = model_name or str(model_dir)
        self.reasoning_parser = reasoning_parser
        self.failures_left = fail_first
        self.max_n = max_n
        self.requests_served = 0
        self.in_flight = self.max_in_flight = 0
        self._state = threading.Lock()
        self._model = threading.Lock()  # one generate at a time; requests still overlap in the HTTP layer
        self.httpd = _HTTPServer((host, port), _handler(self))
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> OpenAICompatibleServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def complete(self, body: dict[str, Any], chat: bool) -> tuple[int, dict[str, Any]]:
        """Answer one request: (HTTP status, JSON body)."""
        from ..data.generation import SamplingParams

        with self._state:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            failing = self.failures_left > 0
            self.failures_left -= failing
        try:
            if failing:
                time.sleep(0.05)
                return 503, {"error": {"message": "server busy (injected failure)", "type": "overloaded"}}
            prompt = body.get("messages") if chat else body.get("prompt")
            if not prompt or (chat and not isinstance(prompt, list)) or (not chat and not isinstance(prompt, str)):
                return 400, {"error": {"message": "missing or malformed messages/prompt", "type": "invalid_request"}}
            n = int(body.get("n", 1))
            params = SamplingParams(num_samples=min(n, self.max_n or n), max_new_tokens=int(body.get("max_tokens", 16)),
                                    temperature=float(body.get("temperature", 1.0)), top_p=float(body.get("top_p", 1.0)))
            with self._model:
                (outputs,) = self.generator.generate([prompt], params, seed=int(body.get("seed", 0)))
            choices = [self._choice(i, o, chat) for i, o in enumerate(outputs)]
            tokens = sum(o.num_tokens or 0 for o in outputs)
            with self._state:
                self.requests_served += 1
            return 200, {"id": f"cmpl-{self.requests_served}", "object": "chat.completion" if chat else "text_completion",
                         "created": int(time.time()), "model": self.model_name, "choices": choices,
                         "usage": {"completion_tokens": tokens}}
        finally:
            with self._state:
                self.in_flight -= 1

    def _choice(self, index: int, output: Any, chat: bool) -> dict[str, Any]:
        if not chat:
            return {"index": index, "text": output.content, "finish_reason": output.finish_reason}
        message: dict[str, Any] = {"role": "assistant", "content": output.content}
        if self.reasoning_parser:
            text = output.content.removeprefix(THINK_OPEN) if not output.think_prefilled else output.content
            reasoning, closed, content = text.partition(THINK_CLOSE)
            message = {"role": "assistant", "reasoning_content": reasoning, "content": content if closed else None}
        return {"index": index, "message": message, "finish_reason": output.finish_reason}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a builder opens one connection per concurrent prompt


def _handler(server: OpenAICompatibleServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": server.model_name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            routes = {"/v1/chat/completions": True, "/v1/completions": False}
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                return self._send(400, {"error": {"message": "body is not JSON"}})
            if self.path not in routes:
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            self._send(*server.complete(body, chat=routes[self.path]))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Serve a local model on an OpenAI-compatible API.")
    parser.add_argument("model_dir")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--reasoning-parser", action="store_true", help="return reasoning_content like vLLM's")
    args = parser.parse_args(argv)
    with OpenAICompatibleServer(args.model_dir, args.host, args.port, args.reasoning_parser) as server:
        print(f"serving {args.model_dir} at {server.base_url}", flush=True)
        server._thread.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
