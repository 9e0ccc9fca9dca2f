"""`atlas setup codex --trust`: record in Codex that a person trusts atlas's two hooks.

Codex runs a project's hook only after a person trusted it, by the hash of its definition,
and skips an untrusted one without a word (in `codex exec` too). Its own interface for
that is the `/hooks` screen; this does the same through the API that screen uses, Codex's
app server (`codex app-server`, JSON-RPC over stdio): `hooks/list` names each hook with
its key and current hash, and `config/batchWrite` stores that hash as trusted in the
person's own ~/.codex/config.toml. No hash is computed here, so a Codex that changes how
it hashes still agrees with itself. Only atlas's own hooks in this project's
.codex/hooks.json are trusted, and only when the person asked (`--trust`); anything
unexpected is refused with what to do by hand instead.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from atlas_files.facts.errors import BadInput

TIMEOUT = 60.0  # seconds for the whole exchange; Codex starts in one or two
BY_HAND = "open `codex` in the project and trust the atlas hooks in /hooks"


class _AppServer:
    """One `codex app-server` child, ended by its pid when done."""

    def __init__(self, codex: str, cwd: Path) -> None:
        self.proc = subprocess.Popen([codex, "app-server"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.deadline = time.monotonic() + TIMEOUT
        self.buffer = b""
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self._read()
            if message.get("id") != self.next_id:
                continue  # a notification of Codex's own
            if "error" in message:
                raise _Refused(f"{method}: {message['error'].get('message', message['error'])}")
            return message.get("result")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _Refused(f"no answer within {TIMEOUT:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Refused("it exited")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            value = json.loads(line)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Refused(Exception):
    pass


def _ours(root: Path, result: Any, is_ours: Any) -> list[dict[str, Any]]:
    hooks_file = os.path.realpath(root / ".codex" / "hooks.json")
    found = []
    for listing in (result or {}).get("data", []):
        for hook in listing.get("hooks", []):
            if (hook.get("source") == "project" and hook.get("handlerType") == "command"
                    and os.path.realpath(str(hook.get("sourcePath", ""))) == hooks_file
                    and is_ours({"command": hook.get("command")})):
                found.append(hook)
    return found


def trust_hooks(root: Path, is_ours: Any) -> list[str]:
    """Trust atlas's hooks of ``root``'s .codex/hooks.json in Codex; the events trusted.
    ``is_ours`` tells an entry setup wrote. BadInput (exit 2) saying what to do by hand
    when Codex is missing, does not list the hooks, or did not store the trust."""
    codex = shutil.which("codex")
    if codex is None:
        raise BadInput("--trust asks Codex to trust the hooks, and no `codex` is on PATH; "
                       "the hooks are written but not trusted", hint=BY_HAND)
    server = _AppServer(codex, root)
    try:
        server.call("initialize", {"clientInfo": {"name": "atlas", "version": "setup"}})
        server.send({"method": "initialized"})
        listing = {"cwds": [str(root.resolve())]}
        hooks = _ours(root, server.call("hooks/list", listing), is_ours)
        if not hooks:
            raise BadInput(
                "Codex does not list this project's atlas hooks: it reads a project's "
                ".codex/ only once the project is trusted; the hooks are written, not trusted",
                hint="run `codex exec --trust` here once (or add [projects.\"<this folder>\"] "
                "trust_level = \"trusted\" to ~/.codex/config.toml), then setup --trust again")
        edits = [{"keyPath": "hooks.state", "mergeStrategy": "upsert",
                  "value": {hook["key"]: {"trusted_hash": hook["currentHash"]}}}
                 for hook in hooks if hook.get("trustStatus") != "trusted"]
        if edits:
            server.call("config/batchWrite", {"edits": edits})
        again = _ours(root, server.call("hooks/list", listing), is_ours)
        if not again or any(hook.get("trustStatus") != "trusted" for hook in again):
            raise BadInput("Codex did not record the atlas hooks as trusted", hint=BY_HAND)
        return [str(hook.get("eventName")) for hook in again]
    except _Refused as exc:
        raise BadInput(f"Codex's app server did not trust the hooks ({exc}); the hooks are "
                       "written, not trusted", hint=BY_HAND) from None
    except OSError as exc:
        raise BadInput(f"Codex's app server could not be asked ({exc.strerror or exc}); the "
                       "hooks are written, not trusted", hint=BY_HAND) from None
    finally:
        server.close()
