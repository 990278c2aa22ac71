"""A deterministic OpenAI-compatible server on 127.0.0.1 for the LLM tests.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models``.

Behaviour is chosen by markers in the request's messages (so concurrent calls
stay deterministic):

- ``#fail429``   first request with this exact body: 429 (``retry-after-ms: 20``), then normal
- ``#fail500``   first request with this exact body: 500, then normal
- ``#timeout``   sleep ``slow_seconds`` before replying (past the client timeout)
- ``#malformed`` 200 with a body that is not JSON
- ``#noprose``   200, well-formed envelope, text that is not the JSON the judge asked for
- ``#unknown``   the answerer replies "No information found."
- ``#needsN``    (in the query of a RAG prompt) "No information found." unless the prompt holds N sources
- ``#echokey``   400 whose error body echoes the request's ``Authorization`` header (as some
                 endpoints do); ``#echokey500``: the same with 500 (retried by the client)
- ``#refusal``   200 with ``message.refusal`` set and ``content: null`` (OpenAI's refusal shape)
- ``#sorry``     200 with the text "I'm sorry, I can't help with that."
- ``#replicates:PATTERN``  (judge requests only) a judge reply chosen by the request's replicate (OpenAI ``seed``; none
                 = replicate 0): letter ``PATTERN[seed % len]``, ``T`` is_correct true, ``F`` false,
                 ``X`` a reply that is not JSON (also when asked again), ``R`` not JSON at first,
                 a true verdict when asked again (a request holding an assistant turn)
- ``#garbage-once`` (judge requests only) a judge reply that is not JSON at first; asked again (a request holding an
                 assistant turn, the judge's repair), the normal judge reply to the first question

- ``#huge``       200, a well-formed envelope whose text is ``huge_bytes`` (10 MB) long, no ``usage``

``FakeOpenAI(reply_bytes=N)`` answers every chat request as ``#huge`` does, with a text of N bytes.
``FakeOpenAI(serial_seconds=S)`` is a server that answers one chat request at a time, each after S
seconds (as llama.cpp's server does: a request whose client went away before its turn is skipped).
``FakeOpenAI(max_in_flight=N)`` answers a chat request that finds N others in flight with a 429
(no ``Retry-After``). ``in_flight_high`` is the most chat requests it held at once.
``FakeOpenAI(echo_key_status=400)`` answers every chat request with the echoing error.
``FakeOpenAI(embeddings_status=401)`` answers every embeddings request (after the first
``embeddings_ok_first``, answered normally) with that status and an
OpenAI-style error body that echoes the request's key (``invalid_api_key``).

A reranking request (Pathway's ``prompts.prompt_rerank``, as ``LLMReranker`` sends it) gets
``{"score": n}``, n = 1 + round(4 x the share of the question's content words in the document).

Normal replies:

- a request carrying instructor's JSON schema ("json_schema:" in a system message,
  as ragas sends) -> an instance of that schema, filled from the prompt's input;
- a judge request ("is_correct" in the system prompt) -> ``{"reason", "is_correct"}``
  with is_correct = every word of the label appears in the prediction (dates excepted);
- a RAG prompt -> the first sentence of the numbered source sharing most words with
  the query, followed by its citation, e.g. ``"The term is five years. [2]"``; in a prompt whose
  documents are JSON lines (Pathway's ``SimpleContextProcessor``), the same, or
  "No information found." when no document shares two content words with the query.

``FakeOpenAI(broken_vectors=MODE)`` answers the probe text ``"."`` as usual and every other text with a
vector an index cannot use: ``nan`` (32 NaNs), ``zero`` (32 zeros), ``empty`` (no value) or ``mixed``
(16 wide for about half the texts, 32 for the others); ``short`` answers a request of several texts with
one vector fewer. Vectors are 32 wide otherwise (narrower than any
OpenAI model's).

``FakeOpenAI(models_status=401)`` answers ``GET /v1/models`` (what an endpoint probe asks) with that
status and an OpenAI-style error body.

``requests`` counts every POST request (also those answered with errors); ``probes`` every GET;
``log`` keeps the POSTs' (path, body) pairs.
"""

from __future__ import annotations

import hashlib
import json
import re
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_STOP = {
    "the",
    "a",
    "an",
    "of",
    "is",
    "are",
    "was",
    "what",
    "who",
    "which",
    "when",
    "does",
    "do",
    "to",
    "in",
    "on",
    "for",
    "and",
    "or",
    "by",
    "this",
    "that",
    "with",
    "agreement",
    "contract",
}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return m.group(1) if m else text


def _sources(prompt: str) -> list[tuple[int, str]]:
    """Numbered chunks ``[n] text`` of a RAG prompt."""
    body = prompt
    if "\n------\n" in prompt:
        parts = prompt.split("\n------\n")
        if len(parts) >= 3:
            body = parts[1]
    out = []
    for m in re.finditer(r"\[(\d+)\]\s*(.*?)(?=\n\n\[\d+\]|\Z)", body, re.S):
        out.append((int(m.group(1)), m.group(2).strip()))
    return out


def _json_sources(prompt: str) -> list[tuple[int, str]]:
    """The documents of a prompt filled by Pathway's SimpleContextProcessor: one JSON object per
    line (``{"text": ..., "path": ...}``), numbered in their order."""
    out = []
    for line in prompt.splitlines():
        start = line.find('{"text"')  # a template may put the first one after a label ("Excerpts: {...")
        if start >= 0:
            try:
                out.append((len(out) + 1, str(json.loads(line[start:])["text"])))
            except (ValueError, KeyError):
                continue
    return out


def _query(prompt: str) -> str:
    """The question of a RAG prompt: the last ``Query: ... Answer:`` (a prompt's examples come first)."""
    found = re.findall(r"Query:\s*(.*?)\nAnswer:", prompt, re.S) or re.findall(r"Question:\s*(.*?)\n", prompt)
    return found[-1].strip() if found else prompt[-200:]


def rag_reply(prompt: str) -> str:
    if "#unknown" in prompt:
        return "No information found."
    numbered = _sources(prompt)
    sources = numbered or _json_sources(prompt)
    if not sources:
        return "No information found."
    q = {w for w in _words(_query(prompt)) if w not in _STOP}
    best = max(sources, key=lambda s: (len(q & set(_words(s[1]))), -s[0]))
    if not numbered and len(q & set(_words(best[1]))) < 2:  # a Pathway-style context that barely matches
        return "No information found."
    needs = re.search(r"#needs(\d+)", _query(prompt))
    if needs and len(sources) < int(needs.group(1)):
        return "No information found."
    return f"{_first_sentence(best[1])} [{best[0]}]"


def judge_reply(user: str) -> str:
    pred = re.search(r"Prediction:\s*(.*?)\nLabel:", user, re.S)
    label = re.search(r"Label:\s*(.*)$", user, re.S)
    pw = set(_words(pred.group(1) if pred else ""))
    lw = [w for w in _words(label.group(1) if label else "") if len(w) > 2]
    ok = bool(lw) and all(w in pw for w in lw)
    return json.dumps(
        {"reason": "label words " + ("found" if ok else "missing") + " in the prediction", "is_correct": ok}
    )


GARBAGE = "Let me think about this... the prediction seems to match, mostly."


def replicate_reply(messages: list[dict], body: dict) -> str:
    """``#replicates:PATTERN`` and ``#garbage-once`` (see the module docstring)."""
    everything = "\n".join(m.get("content") or "" for m in messages)
    repair = any(m.get("role") == "assistant" for m in messages)
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    m = re.search(r"#replicates:([TFXR]+)", everything)
    if m is None:  # #garbage-once
        return judge_reply(first_user) if repair else GARBAGE
    pattern = m.group(1)
    letter = pattern[int(body.get("seed") or 0) % len(pattern)]
    if letter == "X" or (letter == "R" and not repair):
        return GARBAGE
    ok = letter in "TR"
    return json.dumps({"reason": f"replicate pattern {pattern}: {letter}", "is_correct": ok})


RERANK_INSTRUCTION = "rate the document's relevance for the question on a scale between 1 and 5"


def rerank_reply(user: str) -> str:
    """Pathway's rerank prompt -> ``{"score": 1..5}`` by word overlap (see the module docstring)."""
    doc = re.search(r"-- Context documents -- \n(.*?)\n-- End of context documents --", user, re.S)
    question = re.search(r"-- Question -- \n(.*?)\n-- End of question --", user, re.S)
    qw = {w for w in _words(question.group(1) if question else "") if w not in _STOP}
    dw = set(_words(doc.group(1) if doc else ""))
    share = len(qw & dw) / len(qw) if qw else 0.0
    return json.dumps({"score": 1 + round(4 * share)})


# ---------------------------------------------------------------- JSON schema filling
def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        schema = root.get("$defs", {}).get(name, {})
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        schema = _resolve(options[0], root) if options else {"type": "null"}
    return schema


def _split_sentences(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if p.strip()]
    return parts or [text.strip() or "statement"]


def fill_schema(schema: dict, root: dict, inputs: dict, name: str = "") -> Any:
    schema = _resolve(schema, root)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: fill_schema(v, root, inputs, k) for k, v in props.items()}
    if kind == "array":
        items = schema.get("items", {})
        if _resolve(items, root).get("type") == "string":
            source = inputs.get("answer") or inputs.get("response") or ""
            if isinstance(source, list):
                return [str(s) for s in source] or ["statement"]
            return _split_sentences(str(source))
        statements = inputs.get("statements") or inputs.get("answer") or []
        if isinstance(statements, str):
            statements = _split_sentences(statements)
        if name in ("FP", "FN"):
            return []
        out = []
        for s in statements or ["statement"]:
            obj = fill_schema(items, root, inputs, "")
            if isinstance(obj, dict) and "statement" in obj:
                obj["statement"] = s
            out.append(obj)
        return out
    if kind == "integer":
        return 0 if name == "noncommittal" else 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "string":
        if name == "question":
            return str(inputs.get("response") or inputs.get("question") or "What is it?")
        if name == "reason":
            return "supported by the context"
        return str(inputs.get("answer") or inputs.get("response") or "text")
    return None


def schema_reply(messages: list[dict]) -> str | None:
    system = " ".join(m.get("content") or "" for m in messages if m.get("role") == "system")
    if "json_schema" not in system:
        return None
    m = re.search(r"json_schema:\s*(\{.*\})\s*Make sure to return an instance", system, re.S)
    if not m:
        return None
    schema = json.loads(m.group(1))
    user = " ".join(m.get("content") or "" for m in messages if m.get("role") == "user")
    inputs: dict = {}
    im = re.search(r"input:\s*(\{.*\})\s*Output:\s*$", user, re.S)
    if im:
        try:
            inputs = json.loads(im.group(1))
        except ValueError:
            inputs = {}
    return json.dumps(fill_schema(schema, schema, inputs))


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _embed(text: str, dim: int = 32) -> list[float]:
    vec = [0.0] * dim
    for w in _words(text) or [text]:  # a text without a word (".", Chinese) is hashed whole: never all zeros
        h = int(hashlib.md5(w.encode()).hexdigest(), 16)
        vec[h % dim] += 1.0 if (h >> 8) % 2 else -1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


PROBE = "."  # the text ragsweep (and Pathway) embed to learn an embedder's width


def broken_vector(mode: str, text: str) -> list[float]:
    """``FakeOpenAI(broken_vectors=mode)``'s vector for ``text`` (see the module docstring)."""
    if mode == "nan":
        return [float("nan")] * 32
    if mode == "zero":
        return [0.0] * 32
    if mode == "empty":
        return []
    if mode == "short":
        return _embed(text)
    if mode == "mixed":
        return _embed(text, 16 if int(hashlib.md5(text.encode()).hexdigest(), 16) % 2 else 32)
    raise ValueError(f"broken_vectors={mode!r}: nan, zero, empty, mixed or short")


def huge_reply(size: int, body: dict) -> bytes:
    """A well-formed chat completion whose text is ``size`` bytes of prose, without ``usage``
    (so a client counts its tokens itself)."""
    line = "All work and no play makes Jack a dull boy. "
    text = (line * (size // len(line) + 1))[:size]
    reply = {
        "id": "chatcmpl-fake-huge",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    return json.dumps(reply).encode()


def _client_gone(conn: socket.socket) -> bool:
    """The client closed its end (it timed out waiting): readable, and nothing to read."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _QuietServer(ThreadingHTTPServer):
    """A client that goes away mid-request (a server process stopped by a test) is not an error here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """HTTP in, :meth:`FakeOpenAI.handle` out; ``fake`` is set per server by :func:`_handler`."""

    fake: "FakeOpenAI"

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None):
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        with self.fake._lock:
            self.fake.probes += 1
        if self.path.rstrip("/").endswith("/models") and self.fake.models_status is not None:
            error = {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}
            self._send(self.fake.models_status, json.dumps(error).encode())
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not self.path.endswith("/chat/completions"):
            self._send(*self.fake.handle(self.path, raw, body, dict(self.headers)))
            return
        with self.fake._lock:
            self.fake.in_flight += 1
            self.fake.in_flight_high = max(self.fake.in_flight_high, self.fake.in_flight)
            crowded = self.fake.max_in_flight is not None and self.fake.in_flight > self.fake.max_in_flight
        try:
            if crowded:
                reply = 429, b'{"error": {"message": "too many requests in flight"}}', {}
            elif self.fake.serial_seconds is not None:
                reply = self._serially(raw, body)
            else:
                reply = self.fake.handle(self.path, raw, body, dict(self.headers))
        finally:  # out of flight before the reply goes: the client may send its next one at once
            with self.fake._lock:
                self.fake.in_flight -= 1
        if reply is not None:
            self._send(*reply)

    def _serially(self, raw: bytes, body: dict) -> tuple[int, bytes, dict] | None:
        """One at a time, as llama.cpp's server; None (no reply) when the client went before its turn."""
        with self.fake._serial:
            if _client_gone(self.connection):
                with self.fake._lock:
                    self.fake.skipped += 1
                return None
            self.fake._stop.wait(self.fake.serial_seconds)
            return self.fake.handle(self.path, raw, body, dict(self.headers))


def _handler(fake: "FakeOpenAI") -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"fake": fake})


class FakeOpenAI:
    def __init__(
        self,
        slow_seconds: float = 3.0,
        echo_key_status: int | None = None,
        embeddings_status: int | None = None,
        embeddings_ok_first: int = 0,
        reply_bytes: int | None = None,
        serial_seconds: float | None = None,
        max_in_flight: int | None = None,
        models_status: int | None = None,
        broken_vectors: str | None = None,
    ):
        self.slow_seconds = slow_seconds
        self.reply_bytes = reply_bytes
        self.huge_bytes = 10_000_000
        self.serial_seconds = serial_seconds
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self.in_flight_high = 0
        self.skipped = 0  # serial: requests whose client had gone before their turn
        self._serial = threading.Lock()
        self.echo_key_status = echo_key_status
        self.embeddings_status = embeddings_status
        self.embeddings_ok_first = embeddings_ok_first  # embeddings requests answered before the status starts
        self.models_status = models_status  # GET /models answered with this status (a key refused: 401)
        self.broken_vectors = broken_vectors
        self.requests = 0
        self.probes = 0  # GET requests (an endpoint probe's GET /models), not in ``requests``
        self.log: list[tuple[str, dict]] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.probes = 0
            self.log.clear()
            self._seen.clear()

    def _vector(self, text: str) -> list[float]:
        if self.broken_vectors is None or text == PROBE:
            return _embed(text)
        return broken_vector(self.broken_vectors, text)

    def chat_requests(self) -> int:
        return sum(1 for path, _ in self.log if path.endswith("/chat/completions"))

    # ------------------------------------------------------------ behaviour
    def handle(self, path: str, raw: bytes, body: dict, headers: dict | None = None) -> tuple[int, bytes, dict]:
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            self.requests += 1
            self.log.append((path, body))
            seen = self._seen.get(digest, 0)
            self._seen[digest] = seen + 1
        embeddings_seen = sum(1 for p, _ in self.log if p.endswith("/embeddings"))
        if path.endswith("/embeddings") and self.embeddings_status and embeddings_seen > self.embeddings_ok_first:
            auth = {k.lower(): v for k, v in (headers or {}).items()}.get("authorization", "")
            key = auth.split(" ", 1)[-1]
            error = {
                "error": {
                    "message": f"Incorrect API key provided: {key}.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                    "param": None,
                }
            }
            return self.embeddings_status, json.dumps(error).encode(), {}
        if path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
            data = [{"object": "embedding", "index": i, "embedding": self._vector(t)} for i, t in enumerate(inputs)]
            if self.broken_vectors == "short" and inputs != [PROBE]:
                data = data[:-1]
            return (
                200,
                json.dumps(
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model", "fake-emb"),
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                ).encode(),
                {},
            )
        if not path.endswith("/chat/completions"):
            return 404, b'{"error": {"message": "not found"}}', {}
        return self._chat(body, headers, seen, digest)

    def _chat(self, body: dict, headers: dict | None, seen: int, digest: str) -> tuple[int, bytes, dict]:
        """A chat completion request (``seen``: times this exact body came before)."""
        messages = body.get("messages") or []
        for m in messages:
            m["content"] = _text(m.get("content"))
        everything = "\n".join(m["content"] for m in messages)
        echo_status = self.echo_key_status or (
            500 if "#echokey500" in everything else 400 if "#echokey" in everything else None
        )
        if echo_status:
            auth = {k.lower(): v for k, v in (headers or {}).items()}.get("authorization", "")
            key = auth.split(" ", 1)[-1]
            error = {
                "error": {
                    "message": f"Incorrect API key provided: {key}. Header was: {auth}",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                    "param": key,
                }
            }
            return echo_status, json.dumps(error).encode(), {}
        if "#fail429" in everything and seen == 0:
            return 429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}', {"retry-after-ms": "20"}
        if "#fail500" in everything and seen == 0:
            return 500, b'{"error": {"message": "internal error"}}', {}
        if "#timeout" in everything:
            self._stop.wait(self.slow_seconds)
        if "#malformed" in everything:
            return 200, b"<html>this is not json", {}
        if self.reply_bytes is not None or "#huge" in everything:
            return 200, huge_reply(self.reply_bytes or self.huge_bytes, body), {}
        return self._reply(messages, body, everything, digest)

    def _reply(self, messages: list[dict], body: dict, everything: str, digest: str) -> tuple[int, bytes, dict]:
        """A 200 with the reply the request's markers or prompt call for."""
        system = " ".join(m["content"] for m in messages if m.get("role") == "system")
        user = " ".join(m["content"] for m in messages if m.get("role") == "user")
        refusal = None
        if "#refusal" in everything:
            text, refusal = None, "I'm sorry, but I can't assist with that request."
        elif "#sorry" in everything:
            text = "I'm sorry, I can't help with that."
        elif ("#replicates:" in everything or "#garbage-once" in everything) and "is_correct" in system:
            text = replicate_reply(messages, body)
        elif "#noprose" in everything:
            text = "Well, I think the prediction looks fine overall."
        else:
            text = schema_reply(messages)
            if text is None:
                text = (
                    judge_reply(user)
                    if "is_correct" in system
                    else rerank_reply(user)
                    if RERANK_INSTRUCTION in user
                    else rag_reply(user)
                )
        prompt_tokens = max(1, len(everything.split()))
        completion_tokens = max(1, len((text or refusal or "").split()))
        reply = {
            "id": "chatcmpl-fake-" + digest[:12],
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": refusal},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return 200, json.dumps(reply).encode(), {}


# ---------------------------------------------------------------- pytest fixtures
try:
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

if pytest is not None:

    @pytest.fixture
    def fake_server():
        server = FakeOpenAI(slow_seconds=2.0).start()
        try:
            yield server
        finally:
            server.stop()

    @pytest.fixture
    def llm_settings(fake_server, tmp_path):
        """Settings pointing at the fake: small timeout, one retry, cache in tmp_path."""
        from ragsweep.llm.settings import LLMSettings

        return LLMSettings(
            base_url=fake_server.base_url,
            model="fake-model",
            api_key="sk-test-SECRET-0123456789",
            timeout=0.6,
            max_retries=1,
            concurrency=4,
            cache_dir=str(tmp_path / "llm-cache"),
            price_per_1k_prompt=0.5,
            price_per_1k_completion=1.5,
        )
