"""A scripted stand-in for a model's HTTP API on 127.0.0.1, so a real harness binary runs a
whole session reproducibly and a test can read exactly what the model was shown.

    script = [turn(Call("Bash", {"command": "atlas put notes -f notes.md"})),
              turn(Say("Written."))]
    with ScriptedModel(ANTHROPIC, script) as model:
        ...run the harness with its base URL at model.url...
    assert "Ship the loader" in model.turns[0].text()   # the briefing reached the model

One request of the harness's agent loop is answered with the next scripted turn (a turn
is a few blocks: ``Say`` text, ``Call`` a tool); the requests a harness makes on the side
(a title, a token count, a "who speaks next" check) get a neutral answer and use no turn.
Past the end of the script every turn is ``then`` (by default one ``Say``), and
``overrun`` counts them: a harness that loops shows up there. Every request is logged,
side requests included, in ``requests``.

Three wire formats, one per API the harnesses speak (each written from its public
reference, streamed as server-sent events):

* ``ANTHROPIC``: the Messages API (Claude Code). ``POST /v1/messages`` with ``tools`` is a
  turn: ``message_start``, per block ``content_block_start`` (``text`` or ``tool_use``),
  ``content_block_delta`` (``text_delta`` or ``input_json_delta``), ``content_block_stop``,
  then ``message_delta`` (``stop_reason`` ``tool_use`` when the turn calls a tool, else
  ``end_turn``) and ``message_stop``.
* ``RESPONSES``: OpenAI's Responses API (Codex). ``POST .../responses`` is a turn:
  ``response.created``, per block ``response.output_item.added`` and ``.done`` (a
  ``message`` with ``output_text``, or a ``function_call`` with ``call_id``, ``name``,
  ``arguments``), ``response.completed``.
* ``GEMINI``: the Gemini API (Gemini CLI). ``POST .../models/M:streamGenerateContent``
  with ``tools`` is a turn: ``data:`` lines of candidates whose parts are ``text`` or
  ``functionCall``, the last with ``finishReason: STOP``.

The server is a thread of the test's own process (nothing to end but the thread, which
``close`` joins) and listens on 127.0.0.1 only.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

BODY_LIMIT = 64 << 20  # a harness sends its whole conversation each turn; never more


@dataclass(frozen=True)
class Say:
    """A text block of the model's answer."""

    text: str


@dataclass(frozen=True)
class Call:
    """A tool call of the model's answer: the harness runs ``tool`` with ``args``."""

    tool: str
    args: dict[str, Any]


Block = Say | Call
Turn = tuple[Block, ...]


def turn(*blocks: Block) -> Turn:
    return tuple(blocks)


@dataclass
class Request:
    """One request the harness made: its path, its JSON body, and which scripted turn
    answered it (None: a side request, or past the script's end)."""

    method: str
    path: str
    body: Any
    turn: int | None = None

    def text(self) -> str:
        """Every string the request carries to the model (system prompt, messages, tool
        results, injected context), tool definitions left out, one per line."""
        return "\n".join(_strings(self.body))

    def tool_names(self) -> list[str]:
        """The tools offered to the model in this request."""
        return [name for name in _tool_names(self.body)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("tools", "toolConfig", "tool_choice"):
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _tool_names(body: Any) -> Iterator[str]:
    if not isinstance(body, dict):
        return
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("name"), str):
            yield tool["name"]
        for decl in tool.get("functionDeclarations") or []:  # Gemini groups its functions
            if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                yield decl["name"]


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _sse(events: Iterable[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def _json(value: Any, status: int = 200) -> Reply:
    return Reply(status, "application/json", json.dumps(value).encode())


class Wire:
    """How one API frames a turn; ``is_turn`` tells a request of the agent loop from a
    side request, ``answer`` frames a scripted turn, ``aside`` answers the rest."""

    name = "wire"

    def is_turn(self, path: str, body: Any) -> bool:
        raise NotImplementedError

    def answer(self, path: str, body: Any, blocks: Turn, n: int) -> Reply:
        raise NotImplementedError

    def aside(self, path: str, body: Any) -> Reply:
        return _json({"error": {"message": f"the scripted model has no {path}"}}, 404)


class AnthropicWire(Wire):
    name = "anthropic"

    def is_turn(self, path: str, body: Any) -> bool:
        return (path.endswith("/v1/messages") and isinstance(body, dict)
                and bool(body.get("tools")))

    def answer(self, path: str, body: Any, blocks: Turn, n: int) -> Reply:
        model = body.get("model", "scripted") if isinstance(body, dict) else "scripted"
        content: list[dict[str, Any]] = []
        for i, block in enumerate(blocks):
            if isinstance(block, Say):
                content.append({"type": "text", "text": block.text})
            else:
                content.append({"type": "tool_use", "id": f"toolu_{n:03d}_{i:02d}",
                                "name": block.tool, "input": block.args})
        stop = "tool_use" if any(isinstance(b, Call) for b in blocks) else "end_turn"
        usage = {"input_tokens": 100, "output_tokens": 20}
        message = {"id": f"msg_{n:04d}", "type": "message", "role": "assistant",
                   "model": model, "content": content, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if not (isinstance(body, dict) and body.get("stream")):
            return _json(message)
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("message_start", {"type": "message_start",
                               "message": {**message, "content": [], "stop_reason": None,
                                           "usage": {**usage, "output_tokens": 1}}})]
        for i, item in enumerate(content):
            if item["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": item["text"]}
            else:
                start = {**item, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(item["input"])}
            events += [
                ("content_block_start", {"type": "content_block_start", "index": i,
                                         "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": i,
                                         "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": i})]
        events += [("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 20}}),
                   ("message_stop", {"type": "message_stop"})]
        return Reply(200, "text/event-stream", _sse(events))

    def aside(self, path: str, body: Any) -> Reply:
        if path.endswith("/count_tokens"):
            return _json({"input_tokens": 100})
        if path.endswith("/v1/messages"):  # a title, a summary: any short text will do
            return self.answer(path, body, (Say("Scripted session"),), 0)
        return super().aside(path, body)


class ResponsesWire(Wire):
    name = "responses"

    def is_turn(self, path: str, body: Any) -> bool:
        return path.endswith("/responses") and isinstance(body, dict)

    def answer(self, path: str, body: Any, blocks: Turn, n: int) -> Reply:
        rid = f"resp_{n:04d}"
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("response.created", {"type": "response.created",
                                  "response": {"id": rid, "status": "in_progress"}})]
        for i, block in enumerate(blocks):
            item: dict[str, Any]
            if isinstance(block, Say):
                item = {"type": "message", "role": "assistant", "id": f"msg_{n:04d}_{i}",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": block.text,
                                     "annotations": []}]}
            else:
                item = {"type": "function_call", "id": f"fc_{n:04d}_{i}",
                        "call_id": f"call_{n:04d}_{i}", "name": block.tool,
                        "arguments": json.dumps(block.args), "status": "completed"}
            events += [("response.output_item.added", {"type": "response.output_item.added",
                                                       "output_index": i, "item": item}),
                       ("response.output_item.done", {"type": "response.output_item.done",
                                                      "output_index": i, "item": item})]
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 120}
        events.append(("response.completed", {"type": "response.completed",
                                              "response": {"id": rid, "status": "completed",
                                                           "usage": usage}}))
        return Reply(200, "text/event-stream", _sse(events))


class GeminiWire(Wire):
    name = "gemini"

    def is_turn(self, path: str, body: Any) -> bool:
        return (":streamGenerateContent" in path and isinstance(body, dict)
                and bool(body.get("tools")))

    def answer(self, path: str, body: Any, blocks: Turn, n: int) -> Reply:
        parts = [{"text": b.text} if isinstance(b, Say)
                 else {"functionCall": {"name": b.tool, "args": b.args}} for b in blocks]
        usage = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": usage, "modelVersion": "scripted"}
        if ":streamGenerateContent" not in path:
            return _json(chunk)
        return Reply(200, "text/event-stream", _sse([(None, chunk)]))

    def aside(self, path: str, body: Any) -> Reply:
        if ":countTokens" in path:
            return _json({"totalTokens": 100})
        if ":generateContent" in path or ":streamGenerateContent" in path:
            # Gemini CLI's own checks (who speaks next, loop detection) ask for JSON;
            # "the user speaks next" ends the turn, as a finished answer would.
            answer = json.dumps({"next_speaker": "user", "reasoning": "scripted"})
            return self.answer(path, body, (Say(answer),), 0)
        return super().aside(path, body)


ANTHROPIC: Wire = AnthropicWire()
RESPONSES: Wire = ResponsesWire()
GEMINI: Wire = GeminiWire()


class ScriptedModel:
    """The stand-in server: ``url`` is its base URL; ``requests`` every request, in
    order; ``turns`` the requests answered with a turn of the script (``then`` included),
    ``overrun`` how many of those came past the script's end."""

    def __init__(self, wire: Wire, script: Sequence[Turn],
                 then: Turn = (Say("Done."),)) -> None:
        self.wire = wire
        self.script = list(script)
        self.then = then
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._served = itertools.count()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # bound to "127.0.0.1" above: a str, never bytes
        return f"http://{host}:{port}"

    @property
    def turns(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.turn is not None]

    @property
    def overrun(self) -> int:
        return sum(1 for r in self.turns if r.turn is not None and r.turn >= len(self.script))

    def shown(self) -> str:
        """What the model was shown over the whole session: the text of every turn."""
        return "\n".join(r.text() for r in self.turns)

    def respond(self, method: str, path: str, body: Any) -> Reply:
        request = Request(method, path, body)
        with self._lock:
            self.requests.append(request)
            if method == "POST" and self.wire.is_turn(path, body):
                n = next(self._served)
                request.turn = n
                blocks = self.script[n] if n < len(self.script) else self.then
                return self.wire.answer(path, body, blocks, n)
        return self.wire.aside(path, body)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, BODY_LIMIT)) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            reply = model.respond(self.command, urlsplit(self.path).path, body)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(reply.body)

        do_POST = do_GET = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the log is model.requests

    return Handler
