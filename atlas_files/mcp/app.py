"""The server: the tools of :mod:`atlas_files.mcp.tools`, described where a model reads
them, on the official SDK's ``MCPServer``.

What a tool's description says is part of the protocol here: the lease tool carries the
advisory text verbatim, the writing tools the stop sign, the reading tools what they mark
as read and for whom, and the server's instructions the ritual in three lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from atlas_files import __version__
from atlas_files.api.leases import ADVISORY
from atlas_files.mcp import ritual, shapes
from atlas_files.mcp.results import bad_input, install_warning_capture
from atlas_files.mcp.tools import Toolbox

INSTRUCTIONS = (
    "Call begin first: the project's status, what is new to you, the leases held.\n"
    "Every write (put, status_write) takes expect, the version you read; a result starting "
    "stop: means someone wrote since: read it, merge, write again.\n"
    "Call end last with where things stand: the next session reads it first."
)

_STOP = ("Stop sign: if it moved past `expect` (default: the version you last read), "
         "nothing is written and the result starts `stop:` naming who wrote: read it, merge, "
         "write again.")
_YOU = "you (this connection's identity)"

# name -> (description, output schema, writes). Names marked * are fixed by the design.
SPECS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "begin": (  # *
        "Call first, once per session: the briefing, most urgent first, bounded: the "
        f"status (marked read for {_YOU}), what is new since your last session, "
        "corrections of what you read, proposals, decisions, tasks, leases, stale "
        "machines. Records when your session began.",
        ritual.BEGIN_SCHEMA, False),
    "status_read": (  # *
        "The project's status (latest, or `version`) with author, age, corrections and "
        "retraction. Marks that version read for you: status_write then expects it.",
        shapes.STATUS, False),
    "status_write": (  # *
        f"Write the next version of the project's status: where things stand. {_STOP}",
        shapes.WRITTEN, True),
    "get": (  # *
        "Read topic `name` (latest, or `version`): body, author, age, links, corrections, "
        "retraction, proposal state. Marks that version read for you: put then expects it.",
        shapes.TOPIC, False),
    "put": (  # *
        "Write the next version of topic `name`; earlier versions stay. `proposal`: "
        f"accepted only by a decision (decide `accepts`). {_STOP}",
        shapes.WRITTEN, True),
    "feed": (  # *
        "What is new to you: each status and topic of every project newer than the version "
        "you last read. Marks nothing read unless `mark_read`; then all listed are marked "
        "read for you.",
        shapes.FEED, False),
    "lease": (  # *
        "Leases on shared machines, GPUs, datasets. action list: all, with GPU telemetry; "
        "show: a resource's history; machines: each machine's last telemetry row (load, "
        "never intent; stale rows marked); claim (duration, why, optional `paths`: globs "
        "a commit guard warns others off), renew, release; break: take over from a "
        "holder that is gone (why). Held by another: the result starts `held:`. "
        f"`generation` makes a change conditional. {ADVISORY}",
        shapes.LEASE, True),
    "task": (  # *
        "Work items; a claim is a lease (claim again to renew). next: claims the oldest "
        "ready task. drop needs why. Refusals: `held:` another holds it, `stop:` done.",
        shapes.TASK, True),
    "decide": (  # *
        "Append a decision: what was recommended, what was chosen, their relation (stated, "
        "never inferred) and why. Nothing is ever edited: to fix one, use correct.",
        shapes.DECISION, True),
    "end": (  # *
        "Call last: write where things stand as the project's status (stop sign as in "
        "status_write); `ok` false with `todo` if this session wrote nothing to the status. "
        "Lists what others wrote meanwhile and the leases you still hold.",
        ritual.END_SCHEMA, True),
    "topics": (
        "list: every topic, latest version, author, summary, proposal state (`accepted`: "
        "only what stands). history: every version of `name`. diff: `name` from `old` to "
        "`new` (default: latest against the one before).",
        shapes.TOPICS, False),
    "decisions": (
        "The decision log in time order, why in full, corrections shown.",
        shapes.DECISIONS, False),
    "correct": (
        "Write down a bad write: `ref` was wrong, `text` says what is right; it is marked "
        "wherever it is shown. retract (NAME@vN only): its conclusion no longer holds.",
        shapes.CORRECTION, True),
    "search": (
        "Full text over status, topics, decisions, corrections and retractions, best match "
        "first: kind, name, version or id, author, age, snippet, marks (corrected, "
        "retracted, superseded, ...). Marks nothing read.",
        shapes.SEARCH, False),
    "check": (
        "Check the record for what hand edits got wrong: findings with code and hint.",
        shapes.CHECK, False),
}

# Tools that a read-only server keeps, as their ``<name>_read`` method: list and show.
_LOOKS = ("lease", "task")
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
# A break takes a lease from its holder, a release ends one: not merely additive.
TAKE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)


class AtlasTool(Tool):
    """A tool whose rejected arguments come back as ``bad input:`` naming each one, and
    which refuses arguments it does not take (a misspelt ``expect`` must not vanish)."""

    async def run(self, arguments: dict[str, Any], context: Any,
                  convert_result: bool = False) -> Any:
        known = set(self.parameters.get("properties", {}))
        unknown = sorted(set(arguments) - known)
        if unknown:
            return bad_input(f"{self.name} takes no argument {', '.join(unknown)}",
                             f"its arguments: {', '.join(sorted(known)) or 'none'}")
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            what = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in cause.errors())
            return bad_input(f"{self.name}: {what}", "see the tool's input schema")


def _compact(schema: Any) -> Any:
    """The input schema without what costs tokens and says nothing: titles, and the
    ``anyOf [X, null]`` that pydantic writes for an optional argument (absent is null)."""
    if isinstance(schema, list):
        return [_compact(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and "default" in out \
            and out["default"] is None:
        rest = [o for o in options if o != {"type": "null"}]
        del out["anyOf"], out["default"]
        if len(rest) == 1:
            out.update(rest[0])
        else:
            out["anyOf"] = rest
    if "properties" in out:
        out["properties"] = {k: _compact(v) for k, v in out["properties"].items()}
    for key in ("items", "anyOf", "$defs"):
        if key in out:
            value = out[key]
            out[key] = ({k: _compact(v) for k, v in value.items()} if key == "$defs"
                        else _compact(value))
    return out


def make_tool(box: Toolbox, name: str, read_only: bool) -> Tool:
    description, schema, writes = SPECS[name]
    fn = getattr(box, f"{name}_read") if name in _LOOKS and read_only else getattr(box, name)
    if name in _LOOKS:
        annotations = READ if read_only else TAKE
    else:
        annotations = APPEND if writes else READ
    base = Tool.from_function(fn, name=name, description=description, annotations=annotations,
                              structured_output=False)
    tool = AtlasTool(**{field: getattr(base, field) for field in type(base).model_fields})
    tool.parameters = _compact(base.parameters)
    tool.fn_metadata.output_schema = schema
    return tool


@dataclass(frozen=True)
class Served:
    """What one server serves: where, as whom (None over HTTP: each token says), how."""

    root: str
    project: str | None
    identity: str | None
    read_only: bool = False


def tool_names(read_only: bool) -> list[str]:
    """The tools a server lists: a read-only one only those that write no document, entry
    or lease (the lease and task tools there only list and show)."""
    return [n for n, (_, _, writes) in SPECS.items()
            if not read_only or not writes or n in _LOOKS]


def build(served: Served, *, token_verifier: TokenVerifier | None = None,
          issuer_url: str | None = None, resource_url: str | None = None) -> MCPServer[Any]:
    """The server. With ``token_verifier`` (HTTP), every request must carry a bearer
    token it accepts, and the token's identity acts. With ``resource_url`` (OAuth), the
    token must also be for that address, and a 401 points to its protected resource
    metadata."""
    install_warning_capture()
    box = Toolbox(served.root, served.project, served.identity)
    tools = [make_tool(box, n, served.read_only) for n in tool_names(served.read_only)]
    auth = None
    if token_verifier is not None:
        # Validated as strings: AuthSettings keeps a path-less issuer without the trailing
        # slash a bare AnyHttpUrl(...) would add (issuers are compared as strings).
        auth = AuthSettings.model_validate({
            "issuer_url": issuer_url or "http://127.0.0.1",
            "resource_server_url": resource_url,
            "validate_token_resource": True if resource_url else None})
    return MCPServer("atlas", title="atlas record", instructions=INSTRUCTIONS,
                     version=__version__, tools=tools, auth=auth, token_verifier=token_verifier,
                     log_level="WARNING")

