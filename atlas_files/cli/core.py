"""Commands of the record core: init, status, put, get, ls, history, diff, feed."""

from __future__ import annotations

from typing import Any

import click

from atlas_files.cli.app import Context, json_option, pass_ctx
from atlas_files.cli.render import emit_json, read_body, warn
from atlas_files.cli.terminal import echo_body


def _age(written_at: str) -> str:
    from atlas_files import timeutil

    return timeutil.age_of(written_at)


def _marks(ctx: Context, kind: str, name: str, version: int,
           proposal: bool = False) -> dict[str, Any]:
    """Corrections, retraction and acceptance shown wherever a version is read."""
    project = ctx.record.project(ctx.project)
    if not proposal and not ctx.record.has_entries(project, "corrections"):
        # Nothing was ever corrected here: skip importing the entry machinery, which
        # would cost every `atlas status show` a noticeable slice of its cold start.
        return {"corrected_by": [], "retracted": None, "retractions": [], "accepted_by": None}
    from atlas_files import corrections

    return corrections.marks_json(ctx.record, project, kind, name, version)


def _version_json(doc: Any, marks: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": doc.name, "version": doc.version, "author": doc.author,
        "written_at": doc.written_at, "based_on": doc.based_on, "summary": doc.summary,
        "proposal": doc.proposal, "links": list(doc.links), "body": doc.body,
        "digest_ok": doc.digest_ok, "corrected_by": marks.get("corrected_by", []),
        "retracted": marks.get("retracted"), "retractions": marks.get("retractions", []),
        "accepted_by": marks.get("accepted_by"),
    }


def _header(label: str, doc: Any, marks: dict[str, Any]) -> list[str]:
    lines = [f"{label} v{doc.version}, written {_age(doc.written_at)} by {doc.author} "
             f"({doc.written_at}), based on v{doc.based_on}"]
    if doc.summary:
        lines.append(f"summary: {doc.summary}")
    if doc.proposal:
        accepted = marks.get("accepted_by")
        lines.append(f"ACCEPTED by decision {accepted}" if accepted else
                     "PROPOSAL: not accepted by any decision yet")
    retracted = marks.get("retracted")
    if retracted:
        lines.append(f"RETRACTED by {retracted['author']} ({retracted['id']}): "
                     f"{retracted['why']}")
    for r in marks.get("retractions", [])[1:]:
        lines.append(f"also retracted by {r['author']} ({r['id']}): {r['why']}")
    for c in marks.get("corrected_by", []):
        lines.append(f"CORRECTED by {c['author']} ({c['id']}): {c['what']}")
    return lines


def _warn_digest(doc: Any) -> None:
    if doc.digest_ok is False:
        warn(f"{doc.path} was edited in place: its body no longer matches its digest "
             "(versions are immutable; run `atlas check`)")


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--project", "projects", multiple=True, metavar="NAME",
              help="A project to create (repeatable). Default: one project, 'main'.")
@click.option("--default-project", metavar="NAME", help="The project commands use by default.")
@json_option
def init(directory: str, projects: tuple[str, ...], default_project: str | None,
         as_json: bool) -> None:
    """Create a record in DIRECTORY (default: here), or add projects to an existing one.

    Writes atlas.yaml, a README.md that tells a file-only agent the protocol, and a
    .gitignore that keeps live rows (receipts, telemetry) out of git.
    """
    from atlas_files.record import Record

    record = Record.init(directory, projects, default_project)
    if as_json:
        emit_json(record.describe())
    else:
        click.echo(f"record at {record.root} with projects: {', '.join(record.config.projects)}")


@click.group()
def status() -> None:
    """The status stream: one short text per project saying where things stand.

    Read it first (`status show`), write it last (`status write`). Every version stays.
    """


@status.command("show")
@click.option("--version", "version", type=click.IntRange(min=1), help="An earlier version.")
@json_option
@pass_ctx
def status_show(ctx: Context, version: int | None, as_json: bool) -> None:
    """Show the project's current status, led by its version, author and age."""
    from atlas_files import status as statusmod

    project = ctx.record.project(ctx.project)
    doc = statusmod.show(ctx.record, reader=ctx.identity, project=ctx.project, version=version)
    if doc is None:
        if as_json:
            emit_json({"name": "status", "project": project, "version": 0, "author": None,
                       "written_at": None, "based_on": None, "summary": "", "body": "",
                       "corrected_by": [], "retracted": None})
        else:
            click.echo(f"project {project} has no status yet; write the first with "
                       "`atlas status write`")
        return
    marks = _marks(ctx, "status", "status", doc.version)  # a status is never a proposal
    if as_json:
        emit_json({"project": project, **_version_json(doc, marks)})
        return
    _warn_digest(doc)
    click.echo("\n".join(_header(f"status of {project}:", doc, marks)))
    click.echo("")
    click.echo(doc.body, nl=not doc.body.endswith("\n"))


@status.command("write")
@click.option("-f", "--file", "file", metavar="FILE", help="Read the text from FILE ('-': stdin).")
@click.option("--expect", type=click.IntRange(min=0), metavar="N",
              help="The version you read (default: the one your receipt says you read).")
@click.option("--summary", metavar="TEXT", help="One line saying what changed.")
@click.option("--allow-empty", is_flag=True, help="Write an empty status (refused otherwise).")
@json_option
@pass_ctx
def status_write(ctx: Context, file: str | None, expect: int | None, summary: str | None,
                 allow_empty: bool, as_json: bool) -> None:
    """Write the next status version. Refused (exit 3) if someone wrote since you read.

    Receipts belong to an identity: sessions that share one --as share what "read"
    means. Give --expect N to state exactly which version this session read.
    """
    from atlas_files.record import require_identity

    author = require_identity(ctx.identity)
    body = read_body(file, allow_empty)
    doc, warnings = ctx.record.status_write(
        body, author=author, project=ctx.project, expect=expect, summary=summary
    )
    for w in warnings:
        warn(w)
    if as_json:
        emit_json({"name": "status", "version": doc.version, "path": str(doc.path),
                   "warnings": warnings})
    else:
        click.echo(f"wrote status v{doc.version} ({doc.path})")


@status.command("log")
@json_option
@pass_ctx
def status_log(ctx: Context, as_json: bool) -> None:
    """Every status version, newest first."""
    docs = ctx.record.status_log(ctx.project)
    _print_versions(docs, as_json, "status")


@status.command("diff")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def status_diff(ctx: Context, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of two status versions (default: the latest against the one before)."""
    from atlas_files import status as statusmod

    _print_diff(statusmod.diff(ctx.record, old, new, ctx.project), as_json)


def _print_diff(d: Any, as_json: bool) -> None:
    if as_json:
        emit_json({"name": d.name, "from": d.old, "to": d.new, "diff": d.text})
    else:
        click.echo(d.text, nl=False)


def _print_versions(docs: list[Any], as_json: bool, name: str) -> None:
    if as_json:
        emit_json({"name": name, "versions": [
            {"version": d.version, "author": d.author, "written_at": d.written_at,
             "based_on": d.based_on, "summary": d.summary, "proposal": d.proposal,
             "path": str(d.path)}
            for d in reversed(docs)
        ]})
        return
    for d in reversed(docs):
        click.echo(f"v{d.version}  {_age(d.written_at):>16}  {d.author:<16} {d.summary}")


@click.command()
@click.argument("name")
@click.option("-f", "--file", "file", metavar="FILE", help="Read the body from FILE ('-': stdin).")
@click.option("--expect", type=click.IntRange(min=0), metavar="N",
              help="The version you read (default: the one your receipt says you read).")
@click.option("--summary", metavar="TEXT", help="One line saying what this version is.")
@click.option("--proposal", is_flag=True,
              help="Mark this version a proposal: accepted only by a decision (--accepts).")
@click.option("--link", "links", multiple=True, metavar="REF",
              help="What this version builds on: NAME@vN, status@vN or an entry id "
              "(repeatable; must exist).")
@click.option("--allow-empty", is_flag=True, help="Write an empty body (refused otherwise).")
@json_option
@pass_ctx
def put(ctx: Context, name: str, file: str | None, expect: int | None, summary: str | None,
        proposal: bool, links: tuple[str, ...], allow_empty: bool, as_json: bool) -> None:
    """Write the next version of topic NAME (immutable; earlier versions stay).

    The write expects to create N+1, where N is the version you last read. If the topic is
    past N, or you never read a topic that exists, nothing is written and the exit code is
    3: read it (`atlas get NAME`), merge, and write again.

    Receipts belong to an identity: sessions that share one --as share what "read"
    means. Give --expect N to state exactly which version this session read.
    """
    from atlas_files.record import require_identity

    author = require_identity(ctx.identity)
    ctx.record.artifact_stream(name, ctx.project)  # refuse a bad name before reading stdin
    body = read_body(file, allow_empty)
    doc = ctx.record.put(name, body, author=author, project=ctx.project, expect=expect,
                         summary=summary, proposal=proposal, links=links)
    if as_json:
        emit_json({"name": doc.name, "version": doc.version, "path": str(doc.path)})
    else:
        kind = " (a proposal)" if proposal else ""
        click.echo(f"wrote {doc.name} v{doc.version}{kind} ({doc.path})")


@click.command()
@click.argument("name")
@click.option("--version", "version", type=click.IntRange(min=1), metavar="N",
              help="An earlier version (default: the latest).")
@click.option("--body-only", is_flag=True, help="Print the body alone, with no header.")
@json_option
@pass_ctx
def get(ctx: Context, name: str, version: int | None, body_only: bool, as_json: bool) -> None:
    """Read topic NAME (the latest version), and record the read for --as."""
    doc = ctx.record.get(name, reader=ctx.identity, version=version, project=ctx.project)
    marks = _marks(ctx, "artifact", name, doc.version, doc.proposal)
    if as_json:
        emit_json(_version_json(doc, marks))
        return
    _warn_digest(doc)
    if not body_only:
        click.echo("\n".join(_header(name, doc, marks)))
        click.echo("")
    echo_body(doc.body, exact=body_only)


@click.command()
@click.option("--accepted", is_flag=True,
              help="Only what stands: each topic at its newest version that is neither an "
              "open proposal nor retracted.")
@json_option
@pass_ctx
def ls(ctx: Context, accepted: bool, as_json: bool) -> None:
    """Every topic of the project with its latest version, author, age and summary.

    Proposals are marked [proposal] until a decision accepts them (`atlas decide
    --accepts NAME@vN`), then [accepted].
    """
    from atlas_files import artifacts

    record = ctx.record
    project = record.project(ctx.project)
    unreadable: list[str] = []
    if accepted:
        rows = artifacts.ls_accepted(record, project)
    else:
        rows = [(t, _state(record, project, t))
                for t in artifacts.ls(record, project, unreadable)]
    if as_json:
        emit_json({"project": project, "topics": [
            {**t.to_json(), "state": state} for t, state in rows
        ], "unreadable": unreadable})
        return
    if not rows and unreadable:
        # "no topics yet" would invite a first `put` over topics that exist.
        click.echo(f"project {project} has no readable topics; {len(unreadable)} damaged: "
                   f"{', '.join(unreadable)} (see the warnings above; `atlas check` tells "
                   "more)")
        return
    if not rows:
        click.echo(f"project {project} has no topics yet; `atlas put NAME` writes one")
        return
    marks = {"proposed": "  [proposal]", "accepted": "  [accepted]"}
    # One write for the whole table: a record can hold thousands of topics.
    click.echo("\n".join(
        f"{t.name:<24} v{t.version:<5} {_age(t.written_at):>16}  {t.author:<14} "
        f"{t.summary}{marks.get(state, '')}"
        for t, state in rows
    ))


def _state(record: Any, project: str, topic: Any) -> str:
    if not topic.proposal:
        return ""  # only a proposal has a state; skip loading the decision log for the rest
    from atlas_files import corrections

    return corrections.proposal_state(record, project, topic.name, topic.version, True)


@click.command()
@click.argument("name")
@json_option
@pass_ctx
def history(ctx: Context, name: str, as_json: bool) -> None:
    """Every version of topic NAME, newest first."""
    _print_versions(ctx.record.history(name, ctx.project), as_json, name)


@click.command()
@click.argument("name")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def diff(ctx: Context, name: str, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of topic NAME: OLD against NEW (default: the latest against the one
    before; with OLD alone, OLD against the latest; 0 is the empty text before v1)."""
    _print_diff(ctx.record.diff(name, old, new, ctx.project), as_json)


@click.command()
@click.option("--mark-read", is_flag=True, help="Mark everything listed as read.")
@json_option
@pass_ctx
def feed(ctx: Context, mark_read: bool, as_json: bool) -> None:
    """What is new to you (--as): every status and topic newer than the version you read."""
    items = ctx.record.feed(ctx.identity, mark_read=mark_read)
    if as_json:
        emit_json({"as": ctx.identity, "new": [i.to_json() for i in items],
                   "marked_read": mark_read})
        return
    if not items:
        click.echo(f"nothing new to {ctx.identity}")
        return
    lines = []
    for i in items:
        what = f"{i.project}/status" if i.kind == "status" else f"{i.project}/{i.name}"
        seen = f"you read v{i.read_version}" if i.read_version else "never read"
        lines.append(f"{what:<32} v{i.version:<5} ({seen}) by {i.author}, "
                     f"{_age(i.written_at)}: {i.summary}")
    click.echo("\n".join(lines))
    if mark_read:
        click.echo(f"marked {len(items)} as read")
