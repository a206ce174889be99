"""A real HTTP server on loopback that speaks the subset of the SendGrid and Brevo APIs outreach uses.

SendGrid (under /sendgrid/v3/):  POST mail/batch, POST mail/send, POST user/scheduled_sends
Brevo    (under /brevo/v3/):     POST smtp/email, DELETE smtp/email/{messageId}

Each endpoint can be told to answer with another status, slowly, or not at
all within the client's timeout, and to hold its answer until a test
releases it (a barrier, never a sleep in the test). Every request is kept.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

API_KEY = "test-api-key"

ENDPOINTS = {
    ("POST", "/sendgrid/v3/mail/batch"): "sendgrid.batch",
    ("POST", "/sendgrid/v3/mail/send"): "sendgrid.send",
    ("POST", "/sendgrid/v3/user/scheduled_sends"): "sendgrid.cancel",
    ("POST", "/brevo/v3/smtp/email"): "brevo.send",
}
BREVO_DELETE_PREFIX = "/brevo/v3/smtp/email/"


@dataclass
class Request:
    endpoint: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0  # what the server answered (0: still stalling, or the client gave up first)
    answer_headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Behaviour:
    status: int | None = None  # answer with this status (and an error body) instead of success
    delay: float = 0.0  # answer after this many seconds (longer than the client's timeout = a timeout)
    hold: threading.Event | None = None  # answer only once the test sets it
    arrived: threading.Event = field(default_factory=threading.Event)  # set when a request came in


class ProviderApi:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.behaviour: dict[str, Behaviour] = {}
        self.scheduled: dict[str, dict] = {}  # brevo messageId -> payload, while cancelable
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- test side ---------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, provider: str) -> str:
        return f"http://127.0.0.1:{self.port}/{provider}/v3/"

    def start(self) -> ProviderApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases handlers that are stalling
        for behaviour in self.behaviour.values():
            if behaviour.hold:
                behaviour.hold.set()
        self._server.shutdown()
        self._server.server_close()

    def behave(self, endpoint: str, **kwargs: Any) -> Behaviour:
        behaviour = Behaviour(**kwargs)
        self.behaviour[endpoint] = behaviour
        return behaviour

    def received(self, endpoint: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.endpoint == endpoint]

    # --- server side ---------------------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def answer(self, request: Request) -> tuple[int, dict[str, str], Any]:
        if request.endpoint.startswith("sendgrid") and request.headers.get("authorization") != f"Bearer {API_KEY}":
            return 401, {}, {"errors": [{"message": "The provided authorization grant is invalid"}]}
        if request.endpoint.startswith("brevo") and request.headers.get("api-key") != API_KEY:
            return 401, {}, {"code": "unauthorized", "message": "Key not found"}
        if request.endpoint == "sendgrid.batch":
            return 201, {}, {"batch_id": str(uuid.uuid4())}
        if request.endpoint == "sendgrid.send":
            return 202, {"X-Message-Id": uuid.uuid4().hex[:22]}, None
        if request.endpoint == "sendgrid.cancel":
            return 201, {}, {"batch_id": request.body.get("batch_id"), "status": request.body.get("status")}
        if request.endpoint == "brevo.send":
            message_id = f"<{uuid.uuid4().hex}@smtp-relay.mailin.fr>"
            if isinstance(request.body, dict) and request.body.get("scheduledAt"):
                with self._lock:
                    self.scheduled[message_id] = request.body
            return 201, {}, {"messageId": message_id}
        if request.endpoint == "brevo.cancel":
            message_id = unquote(request.path[len(BREVO_DELETE_PREFIX):])
            with self._lock:
                found = self.scheduled.pop(message_id, None)
            if found is None:
                return 404, {}, {"code": "document_not_found", "message": "Scheduled email not found"}
            return 204, {}, None
        return 404, {}, {"message": "not found"}


def _handler_for(api: ProviderApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
            pass

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def do_DELETE(self) -> None:  # noqa: N802
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else b""
            try:
                body = json.loads(data) if data else None
            except ValueError:
                body = data.decode("utf-8", "replace")
            endpoint = ENDPOINTS.get((self.command, self.path), "")
            if self.command == "DELETE" and self.path.startswith(BREVO_DELETE_PREFIX):
                endpoint = "brevo.cancel"
            request = Request(endpoint, self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            # Kept before any stall: a provider that times out on us may still have the message.
            api._record(request)
            behaviour = api.behaviour.get(endpoint)
            if behaviour:
                behaviour.arrived.set()
                if behaviour.hold is not None:
                    behaviour.hold.wait(20)
                if behaviour.delay:
                    api.stopping.wait(behaviour.delay)
            if behaviour and behaviour.status is not None:
                status, headers = behaviour.status, {}
                payload = {"errors": [{"message": f"simulated {behaviour.status}"}]}
            else:
                status, headers, payload = api.answer(request)
            request.status, request.answer_headers = status, headers
            try:
                self._reply(status, headers, payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting

        def _reply(self, status: int, headers: dict[str, str], payload: Any) -> None:
            body = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if body:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

    return Handler
