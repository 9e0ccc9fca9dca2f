"""The tools: each one calls one function of :mod:`atlas_files.api` and returns its
``to_json()``, the document the matching `atlas ... --json` prints.

A tool never takes an identity: it acts as the connection's (``--as`` for stdio, the
bearer token's over HTTP), so a model cannot write in someone else's name. Each signature
is the tool's input schema; each call runs in a worker thread, since the library does
blocking file work and the server answers other clients meanwhile. On a record that
syncs, the API itself fetches before a read and pushes after a write, as for the CLI.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp_types import CallToolResult
from pydantic import Field

from atlas_files.api import Worker, checks
from atlas_files.api import core as api
from atlas_files.api import decisions as decisions_api
from atlas_files.api import leases as leases_api
from atlas_files.api import search as search_api
from atlas_files.api import status as status_api
from atlas_files.api import tasks as tasks_api
from atlas_files.api import telemetry as telemetry_api
from atlas_files.facts.errors import AtlasError
from atlas_files.mcp import ritual
from atlas_files.mcp.results import (
    bad_input,
    capturing,
    failure,
    from_error,
    from_os_error,
    ok,
)

Name = Annotated[str, Field(description="topic name")]
Version = Annotated[int | None, Field(ge=1, description="an earlier version; default latest")]
Expect = Annotated[int | None, Field(
    ge=0, description="the version you read (0: new topic); default: the one you last read")]
Body = Annotated[str, Field(description="the full text (Markdown)")]
Summary = Annotated[str | None, Field(description="one line saying what changed")]
Links = Annotated[list[str], Field(description="refs it builds on: NAME@vN, status@vN, ids")]
Resource = Annotated[str | None, Field(description="e.g. gpubox.gpu0")]
Duration = Annotated[str | None, Field(description="e.g. 45s, 90m, 1h30m")]
Generation = Annotated[int | None, Field(ge=0, description="act only at this generation")]
Paths = Annotated[list[str], Field(description=(
    "claim: repository path globs it covers (src/**); list: leases covering this one file"))]
LeaseAction = Literal["list", "show", "machines", "claim", "renew", "release", "break"]
TaskAction = Literal["list", "show", "add", "claim", "next", "done", "drop", "release"]
TaskId = str | None  # the id, or any unique prefix of it
SearchKind = Literal["status", "artifact", "decision", "correction", "retraction", "task"]
Relation = Literal["agreed", "disagreed", "timed-out"]

log = logging.getLogger("atlas.mcp")


def _empty(body: str, field: str) -> CallToolResult | None:
    # As the CLI refuses an empty body: an immutable empty version helps nobody.
    if body.strip():
        return None
    return bad_input(f"the {field} is empty; nothing was written",
                     f"pass the text in `{field}`")


class Toolbox:
    """The tools of one server: its record, project, and fixed identity (stdio) if any."""

    def __init__(self, root: str | os.PathLike[str], project: str | None,
                 identity: str | None) -> None:
        self.root = Path(root)
        self.project = project
        self.identity = identity

    def identity_of_call(self) -> str | None:
        """Who acts in this call: the bearer token's identity over HTTP, else the server's."""
        token = get_access_token()
        if token is not None:
            return token.subject or token.client_id
        return self.identity

    async def call(self, fn: Callable[[Worker], Any]) -> CallToolResult:
        identity = self.identity_of_call()  # here: the token lives in this task's context

        def work() -> Any:
            # Opened per call: a change to atlas.yaml (a new project) is seen at once.
            worker = Worker.open(self.root, identity, self.project, env={})
            try:
                return fn(worker)
            except (AtlasError, OSError) as exc:
                # A read that found nothing because the record moved away says so.
                raise worker.record.explain(exc) from None

        try:
            result, caught = await anyio.to_thread.run_sync(capturing(work))
        except AtlasError as exc:
            return from_error(exc)
        except OSError as exc:
            return from_os_error(exc)
        except Exception as exc:  # a bug: said as one, never a bare "Error executing tool"
            log.exception("atlas mcp: a tool call failed")
            return failure("bug", f"atlas failed unexpectedly "
                           f"({type(exc).__name__}): this is a bug in atlas, not in the call",
                           "the server's log (stderr) has the traceback; please report it", 1)
        doc = result if isinstance(result, dict) else result.to_json()
        notes = [*(getattr(result, "warnings", None) or ()), *caught]
        return ok(doc, notes)

    # -- the session ritual -------------------------------------------------------------

    async def begin(self) -> CallToolResult:
        return await self.call(ritual.begin)

    async def end(self, status: Annotated[str | None, Field(
            description="where things stand, what is next, what is open: the next status "
            "version (omit it if you wrote the status already)")] = None,
            summary: Summary = None,
            release_leases: Annotated[bool, Field(
                description="give back every lease you still hold")] = False,
            ) -> CallToolResult:
        if status is not None:
            refused = _empty(status, "status")
            if refused:
                return refused
        return await self.call(lambda w: ritual.end(w, status, summary, release_leases))

    # -- status and topics --------------------------------------------------------------

    async def status_read(self, version: Version = None) -> CallToolResult:
        return await self.call(lambda w: status_api.status_show(w, version))

    async def status_write(self, body: Body, expect: Expect = None,
                           summary: Summary = None) -> CallToolResult:
        return _empty(body, "body") or await self.call(
            lambda w: status_api.status_write(w, body, expect=expect, summary=summary))

    async def get(self, name: Name, version: Version = None) -> CallToolResult:
        return await self.call(lambda w: api.get(w, name, version))

    async def put(self, name: Name, body: Body, expect: Expect = None, summary: Summary = None,
                  proposal: bool = False, links: Links = []) -> CallToolResult:  # noqa: B006
        return _empty(body, "body") or await self.call(
            lambda w: api.put(w, name, body, expect=expect, summary=summary,
                              proposal=proposal, links=links))

    async def feed(self, mark_read: bool = False) -> CallToolResult:
        return await self.call(lambda w: api.feed(w, mark_read))

    async def topics(self, action: Literal["list", "history", "diff"] = "list",
                     name: Annotated[str | None, Field(
                         description="topic, or status for the status stream")] = None,
                     old: Annotated[int | None, Field(ge=0)] = None,
                     new: Annotated[int | None, Field(ge=1)] = None,
                     accepted: bool = False) -> CallToolResult:
        if action == "list":
            return await self.call(lambda w: api.ls(w, accepted))
        if not name:
            return bad_input(f"topics {action} needs a name",
                             "pass name: a topic, or status for the status stream")
        if action == "history":
            return await self.call(
                lambda w: status_api.status_log(w) if name == "status" else api.history(w, name))
        return await self.call(lambda w: status_api.status_diff(w, old, new) if name == "status"
                               else api.diff(w, name, old, new))

    # -- leases -------------------------------------------------------------------------

    async def lease(self, action: LeaseAction, resource: Resource = None,
                    duration: Duration = None, why: str | None = None,
                    generation: Generation = None,
                    paths: Paths = []) -> CallToolResult:  # noqa: B006
        if action == "list":
            if len(paths) > 1:
                return bad_input("lease list takes one path (the leases covering that file)",
                                 "e.g. paths: [src/app.py]")
            return await self.call(lambda w: leases_api.ls(w, paths[0] if paths else None))
        if action == "machines":
            return await self.call(lambda w: telemetry_api.ls(w))
        if not resource:
            return bad_input(f"lease {action} needs a resource", "e.g. resource: gpubox.gpu0")
        if action == "show":
            return await self.call(lambda w: leases_api.show(w, resource))
        if action == "claim":
            if not duration or not why:
                return bad_input("lease claim needs a duration and why; nothing was claimed",
                                 "e.g. duration: 90m, why: one line saying what for")
            return await self.call(lambda w: leases_api.claim(w, resource, duration, why, paths))
        if action == "renew":
            return await self.call(lambda w: leases_api.renew(w, resource, duration, generation))
        if action == "release":
            return await self.call(lambda w: leases_api.release(w, resource, generation))
        if not why:
            return bad_input("lease break needs why; nothing was changed",
                             "say why the holder's lease is taken over (e.g. its run is gone)")
        return await self.call(
            lambda w: leases_api.break_(w, resource, why, duration, generation))

    async def lease_read(self, action: Literal["list", "show", "machines"],
                         resource: Resource = None,
                         paths: Paths = []) -> CallToolResult:  # noqa: B006
        """`lease` of a read-only server: only looks."""
        return await self.lease(action, resource, paths=paths)

    # -- tasks --------------------------------------------------------------------------

    async def task(self, action: TaskAction, id: TaskId = None,
                   title: str | None = None, why: str | None = None,
                   duration: str | None = None,
                   after: list[str] = [], paths: list[str] = [],  # noqa: B006
                   link: str | None = None,
                   ) -> CallToolResult:
        if action == "list":
            return await self.call(lambda w: tasks_api.ls(w))
        if action == "add":
            if not title:
                return bad_input("task add needs a title; nothing was written",
                                 "e.g. title: one line saying what is to be done")
            return await self.call(lambda w: tasks_api.add(w, title, why, after, paths))
        if action in ("next", "claim") and not duration:
            return bad_input(f"task {action} needs a duration; nothing was claimed",
                             "e.g. duration: 2h (claim again to renew)")
        if action == "next":
            return await self.call(lambda w: tasks_api.next_(w, duration or ""))
        if not id:
            return bad_input(f"task {action} needs an id", "task list shows each task's id")
        if action == "show":
            return await self.call(lambda w: tasks_api.show(w, id))
        if action == "claim":
            return await self.call(lambda w: tasks_api.claim(w, id, duration or ""))
        if action == "done":
            return await self.call(lambda w: tasks_api.done(w, id, why, link))
        if action == "drop":
            if not why:
                return bad_input("task drop needs why; nothing was changed",
                                 "say why it will not be done")
            return await self.call(lambda w: tasks_api.drop(w, id, why, link))
        return await self.call(lambda w: tasks_api.release(w, id))

    async def task_read(self, action: Literal["list", "show"],
                        id: TaskId = None) -> CallToolResult:
        """`task` of a read-only server: only looks."""
        return await self.task(action, id)

    # -- decisions and corrections ------------------------------------------------------

    async def decide(self, topic: Annotated[str, Field(description="what it is about")],
                     recommended: str, chosen: str, relation: Relation, why: str,
                     recommended_by: str | None = None, links: Links = [],  # noqa: B006
                     accepts: Annotated[str | None, Field(
                         description="NAME@vN of a proposal this accepts")] = None,
                     ) -> CallToolResult:
        return await self.call(lambda w: decisions_api.decide(
            w, topic=topic, recommended=recommended, chosen=chosen, relation=relation,
            why=why, recommended_by=recommended_by, links=links, accepts=accepts))

    async def decisions(self, topic: str | None = None, relation: Relation | None = None,
                        since: Annotated[str | None, Field(
                            description="RFC 3339 time, date, or age like 7d")] = None,
                        ) -> CallToolResult:
        return await self.call(lambda w: decisions_api.decisions(
            w, topic=topic, relation=relation, since=since))

    async def correct(self, ref: Annotated[str, Field(
            description="NAME@vN, status@vN or a decision id")],
            text: Annotated[str, Field(description="what is right (retract: why)")],
            retract: bool = False) -> CallToolResult:
        if retract:
            return await self.call(lambda w: decisions_api.retract(w, ref, text))
        return await self.call(lambda w: decisions_api.correct(w, ref, text))

    # -- machines and the record's health -----------------------------------------------

    async def search(self, query: Annotated[str, Field(
            description='words (all must match), "quoted phrases", prefix*')],
            kinds: list[SearchKind] = [],  # noqa: B006
            all_versions: Annotated[bool, Field(
                description="every version, not only the newest of each topic")] = False,
            limit: Annotated[int, Field(ge=1, le=1000)] = 20) -> CallToolResult:
        return await self.call(lambda w: search_api.search(
            w, query, kinds=kinds, all_versions=all_versions, limit=limit))

    async def check(self) -> CallToolResult:
        root = self.root.resolve()
        return await self.call(lambda w: checks.check(root, base=root))
