"""The HTTP side of a ready simulated server: /health, /get_model_info, /get_server_info, /v1/models and
/generate on 127.0.0.1, each request logged the way uvicorn's access log prints it."""

from __future__ import annotations

import http.server
import json
import socket
from collections.abc import Callable
from typing import Any


def make_http_server(
    port: int, log_line: Callable[[str], None], version: str, model_path: str, values: dict[str, Any]
) -> http.server.ThreadingHTTPServer:
    """Bind 127.0.0.1:port now (OSError when taken, as uvicorn's bind fails); serve with serve_forever()."""
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
            if path in ("/health", "/health_generate"):
                self._send(200, b"")
            elif path == "/get_model_info":
                self._send(200, json.dumps(info).encode())
            elif path == "/get_server_info":
                body = {k.replace("-", "_"): v for k, v in values.items()} | {"version": version}
                self._send(200, json.dumps(body, default=str).encode())
            elif path == "/v1/models":
                served = values.get("--served-model-name") or model_path
                self._send(
                    200, json.dumps({"object": "list", "data": [{"id": served, "object": "model"}]}).encode()
                )
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            if self.path.split("?", 1)[0] == "/generate":
                self._send(
                    200, json.dumps({"text": " Paris.", "meta_info": {"finish_reason": "stop"}}).encode()
                )
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def log_message(self, format: str, *args: Any) -> None:
            host, port = self.client_address[:2]
            code = str(args[1]) if len(args) > 1 else ""
            reason = {"200": "OK", "404": "Not Found"}.get(code, "")
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
