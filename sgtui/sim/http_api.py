"""The HTTP side of a ready simulated server on 127.0.0.1, each request logged the way uvicorn's access
log prints it: /health, /health_generate, the model and server info under the release's names
(`ServingRules`: /model_info and /server_info from 0.5.6, the old /get_* names logging SGLang's
deprecation warning), /v1/models, /metrics with --enable-metrics, and /generate and /v1/completions,
streamed (SSE, `data: ...` then `data: [DONE]`) or not, served by `serving_engine.SimEngine`."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from sgtui.sim.serving_engine import Request, SimEngine

NOT_FOUND = b'{"detail":"Not Found"}'


def make_http_server(
    port: int, log_line: Callable[..., None], version: str, model_path: str, values: dict[str, Any]
) -> http.server.ThreadingHTTPServer:
    """Bind 127.0.0.1:port now (OSError when taken, as uvicorn's bind fails); serve with serve_forever()."""
    from sgtui.core.sglang.windows import serving_rules

    rules = serving_rules(version)
    engine = SimEngine(log_line, version, values, model_path)
    info = {
        "model_path": model_path,
        "tokenizer_path": model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": None,
        "architectures": None,
    }
    server_info = {k.lstrip("-").replace("-", "_"): v for k, v in values.items()} | {"version": version}
    get_routes: dict[str, Callable[[], tuple[int, bytes, str]]] = {
        "/v1/models": lambda: (
            200,
            json.dumps({"object": "list", "data": [{"id": engine.model, "object": "model"}]}).encode(),
            "application/json",
        ),
        "/get_model_info": lambda: (200, json.dumps(info).encode(), "application/json"),
        "/get_server_info": lambda: (200, json.dumps(server_info, default=str).encode(), "application/json"),
    }
    if rules.model_info_path != "/get_model_info":
        get_routes[rules.model_info_path] = get_routes["/get_model_info"]
        get_routes[rules.server_info_path] = get_routes["/get_server_info"]
    excluded = values.get("--uvicorn-access-log-exclude-prefixes") or ()
    quiet = tuple([excluded] if isinstance(excluded, str) else [str(p) for p in excluded if p])
    deprecated = {"/get_model_info": rules.model_info_path, "/get_server_info": rules.server_info_path}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/health":
                self._send(200, b"")
            elif path == "/health_generate":
                ok = engine.health_generate()
                if not ok:
                    time.sleep(2.0)  # SGLang waits HEALTH_CHECK_TIMEOUT (20 s) for a token
                    log_line("Health check failed. Server couldn't get a response from detokenizer")
                self._send(200 if ok else 503, b"")
            elif path == "/metrics" and (text := engine.metrics_text()) is not None:
                self._metrics(text)
            elif path in get_routes:
                if path in deprecated and deprecated[path] != path:
                    log_line(
                        f"Endpoint '{path}' is deprecated and will be removed in a future version. "
                        f"Please use '{deprecated[path]}' instead."
                    )
                self._send(*get_routes[path]())
            else:
                self._send(404, NOT_FOUND)

        def _metrics(self, text: bytes) -> None:
            """As prometheus_client's ASGI app (SGLang's /metrics): gzip when the client accepts it."""
            from prometheus_client.exposition import gzip_accepted

            zipped = gzip_accepted(self.headers.get("accept-encoding", ""))
            body = gzip.compress(text) if zipped else text
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
            if zipped:
                self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, b'{"detail":"bad JSON"}')
                return
            path = self.path.split("?", 1)[0]
            if path == "/generate":
                self._generate(body)
            elif path == "/v1/completions":
                self._completions(body)
            else:
                self._send(404, NOT_FOUND)

        def _request(self, prompt: Any, max_new: Any, stream: bool) -> Request:
            n = len(prompt) if isinstance(prompt, list) else max(1, len(str(prompt or "").split()))
            return Request(n, max(1, min(int(max_new or 16), 4096)), stream)

        def _generate(self, body: dict[str, Any]) -> None:
            params = body.get("sampling_params") or {}
            req = self._request(body.get("input_ids") or body.get("text"), params.get("max_new_tokens"),
                                bool(body.get("stream")))  # fmt: skip
            rid = uuid.uuid4().hex
            text = ""

            def event(i: int, finished: bool) -> dict[str, Any]:
                finish = {"type": "length", "length": req.max_new_tokens} if finished else None
                meta = {"id": rid, "prompt_tokens": req.input_tokens, "completion_tokens": i,
                        "finish_reason": finish}  # fmt: skip
                return {"text": text, "meta_info": meta}

            if not req.stream:
                for piece in engine.generate(req):
                    text += piece
                self._send(200, json.dumps(event(req.max_new_tokens, True)).encode())
                return
            self._start_stream()
            for i, piece in enumerate(engine.generate(req), 1):
                text += piece
                self._sse(event(i, i == req.max_new_tokens))
            self._sse_done()

        def _completions(self, body: dict[str, Any]) -> None:
            req = self._request(body.get("prompt"), body.get("max_tokens"), bool(body.get("stream")))
            cid = f"cmpl-{uuid.uuid4().hex}"
            usage = {"prompt_tokens": req.input_tokens, "completion_tokens": req.max_new_tokens,
                     "total_tokens": req.input_tokens + req.max_new_tokens}  # fmt: skip

            def choice(text: str, finished: bool) -> dict[str, Any]:
                finish = "length" if finished else None
                return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}

            base = {"id": cid, "object": "text_completion", "created": int(time.time())}
            base["model"] = engine.model
            if not req.stream:
                text = "".join(engine.generate(req))
                self._send(200, json.dumps(base | {"choices": [choice(text, True)], "usage": usage}).encode())
                return
            self._start_stream()
            for i, piece in enumerate(engine.generate(req), 1):
                self._sse(base | {"choices": [choice(piece, i == req.max_new_tokens)], "usage": None})
            self._sse(base | {"choices": [], "usage": usage})
            self._sse_done()

        def _start_stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True

        def _sse(self, data: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
            self.wfile.flush()

        def _sse_done(self) -> None:
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            if quiet and self.path.startswith(quiet):  # --uvicorn-access-log-exclude-prefixes
                return
            host, port = self.client_address[:2]
            code = str(args[1]) if len(args) > 1 else ""
            reason = {"200": "OK", "404": "Not Found", "503": "Service Unavailable"}.get(code, "")
            log_line(f'INFO:     {host}:{port} - "{self.requestline}" {code} {reason}'.rstrip())

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.server_bind()
        server.server_activate()
    except OSError:
        server.server_close()
        raise
    return server
