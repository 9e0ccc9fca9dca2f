"""Commands of the record core: init, status, put, get, ls, history, diff, feed."""

from __future__ import annotations

from typing import Any

import click

from atlas_files import timeutil
from atlas_files.api import core
from atlas_files.cli.app import Invocation, json_option, pass_ctx
from atlas_files.cli.render import emit_json, read_body, warn
from atlas_files.cli.terminal import echo_body


def _age(written_at: str) -> str:
    return timeutil.age_of(written_at)


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
    info = core.init(directory, projects, default_project)
    if as_json:
        emit_json(info.to_json())
    else:
        click.echo(f"record at {info.root} with projects: {', '.join(info.projects)}")


@click.group()
def status() -> None:
    """The status stream: one short text per project saying where things stand.

    Read it first (`status show`), write it last (`status write`). Every version stays.
    """


@status.command("show")
@click.option("--version", "version", type=click.IntRange(min=1), help="An earlier version.")
@json_option
@pass_ctx
def status_show(ctx: Invocation, version: int | None, as_json: bool) -> None:
    """Show the project's current status, led by its version, author and age."""
    view = core.status_show(ctx.worker, version)
    if as_json:
        emit_json(view.to_json())
        return
    if view.doc is None:
        click.echo(f"project {view.project} has no status yet; write the first with "
                   "`atlas status write`")
        return
    _warn_digest(view.doc)
    click.echo("\n".join(_header(f"status of {view.project}:", view.doc, view.marks)))
    click.echo("")
    click.echo(view.doc.body, nl=not view.doc.body.endswith("\n"))


@status.command("write")
@click.option("-f", "--file", "file", metavar="FILE", help="Read the text from FILE ('-': stdin).")
@click.option("--expect", type=click.IntRange(min=0), metavar="N",
              help="The version you read (default: the one your receipt says you read).")
@click.option("--summary", metavar="TEXT", help="One line saying what changed.")
@click.option("--allow-empty", is_flag=True, help="Write an empty status (refused otherwise).")
@json_option
@pass_ctx
def status_write(ctx: Invocation, file: str | None, expect: int | None, summary: str | None,
                 allow_empty: bool, as_json: bool) -> None:
    """Write the next status version. Refused (exit 3) if someone wrote since you read.

    Receipts belong to an identity: sessions that share one --as share what "read"
    means. Give --expect N to state exactly which version this session read.
    """
    core.check_write(ctx.worker)
    body = read_body(file, allow_empty)
    written = core.status_write(ctx.worker, body, expect=expect, summary=summary)
    for w in written.warnings or ():
        warn(w)
    if as_json:
        emit_json(written.to_json())
    else:
        click.echo(f"wrote status v{written.version} ({written.path})")


@status.command("log")
@json_option
@pass_ctx
def status_log(ctx: Invocation, as_json: bool) -> None:
    """Every status version, newest first."""
    _print_versions(core.status_log(ctx.worker), as_json)


@status.command("diff")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def status_diff(ctx: Invocation, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of two status versions (default: the latest against the one before)."""
    _print_diff(core.status_diff(ctx.worker, old, new), as_json)


def _print_diff(view: core.DiffView, as_json: bool) -> None:
    if as_json:
        emit_json(view.to_json())
    else:
        click.echo(view.diff.text, nl=False)


def _print_versions(listing: core.VersionList, as_json: bool) -> None:
    if as_json:
        emit_json(listing.to_json())
        return
    for d in listing.versions:
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
def put(ctx: Invocation, name: str, file: str | None, expect: int | None, summary: str | None,
        proposal: bool, links: tuple[str, ...], allow_empty: bool, as_json: bool) -> None:
    """Write the next version of topic NAME (immutable; earlier versions stay).

    The write expects to create N+1, where N is the version you last read. If the topic is
    past N, or you never read a topic that exists, nothing is written and the exit code is
    3: read it (`atlas get NAME`), merge, and write again.

    Receipts belong to an identity: sessions that share one --as share what "read"
    means. Give --expect N to state exactly which version this session read.
    """
    core.check_write(ctx.worker, name)
    body = read_body(file, allow_empty)
    written = core.put(ctx.worker, name, body, expect=expect, summary=summary,
                       proposal=proposal, links=links)
    if as_json:
        emit_json(written.to_json())
    else:
        kind = " (a proposal)" if written.proposal else ""
        click.echo(f"wrote {written.name} v{written.version}{kind} ({written.path})")


@click.command()
@click.argument("name")
@click.option("--version", "version", type=click.IntRange(min=1), metavar="N",
              help="An earlier version (default: the latest).")
@click.option("--body-only", is_flag=True, help="Print the body alone, with no header.")
@json_option
@pass_ctx
def get(ctx: Invocation, name: str, version: int | None, body_only: bool, as_json: bool) -> None:
    """Read topic NAME (the latest version), and record the read for --as."""
    view = core.get(ctx.worker, name, version)
    if as_json:
        emit_json(view.to_json())
        return
    doc, marks = view.doc, view.marks
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
def ls(ctx: Invocation, accepted: bool, as_json: bool) -> None:
    """Every topic of the project with its latest version, author, age and summary.

    Proposals are marked [proposal] until a decision accepts them (`atlas decide
    --accepts NAME@vN`), then [accepted].
    """
    listing = core.ls(ctx.worker, accepted)
    if as_json:
        emit_json(listing.to_json())
        return
    project, rows, unreadable = listing.project, listing.rows, listing.unreadable
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


@click.command()
@click.argument("name")
@json_option
@pass_ctx
def history(ctx: Invocation, name: str, as_json: bool) -> None:
    """Every version of topic NAME, newest first."""
    _print_versions(core.history(ctx.worker, name), as_json)


@click.command()
@click.argument("name")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def diff(ctx: Invocation, name: str, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of topic NAME: OLD against NEW (default: the latest against the one
    before; with OLD alone, OLD against the latest; 0 is the empty text before v1)."""
    _print_diff(core.diff(ctx.worker, name, old, new), as_json)


@click.command()
@click.option("--mark-read", is_flag=True, help="Mark everything listed as read.")
@json_option
@pass_ctx
def feed(ctx: Invocation, mark_read: bool, as_json: bool) -> None:
    """What is new to you (--as): every status and topic newer than the version you read."""
    result = core.feed(ctx.worker, mark_read)
    if as_json:
        emit_json(result.to_json())
        return
    items = result.items
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
