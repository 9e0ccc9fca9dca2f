"""Commands of the record core: init, put, get, ls, history, diff, feed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from atlas_files.api import core
from atlas_files.cli.app import Invocation, json_option, pass_ctx, sync_option
from atlas_files.cli.render import echo_body, emit_json, print_warning, read_body
from atlas_files.cli.versions import list_marks, print_diff, print_versions
from atlas_files.facts import timeutil
from atlas_files.fast.versions import age, header, warn_digest
from atlas_files.protocol.feed import FeedItem, NotMarked


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
    .gitignore that keeps live rows (receipts, telemetry) out of git. Then measures what
    the folder's volume gives the protocol (the volume part of `atlas doctor`) and warns
    about what is degraded or unsafe there, such as a volume that refuses hard links.
    """
    info = core.init(directory, projects, default_project)
    if as_json:
        emit_json(info.to_json())
    else:
        click.echo(f"record at {info.root} with projects: {', '.join(info.projects)}")
    for check in info.volume_warnings:
        print_warning(f"this volume: {check.name} {check.verdict}: {check.detail} "
                      f"(affects {check.affects})")
    if info.volume_warnings:
        print_warning("`atlas doctor` shows the whole picture, this machine's part too")


@click.command()
@click.argument("name")
@click.option("-f", "--file", "file", metavar="FILE",
              help="Read the body from FILE ('-': stdin); at most body_limit bytes (atlas.yaml), "
              "and no more is read.")
@click.option("--expect", type=click.IntRange(min=0), metavar="N",
              help="The version you read (default: the newest you read or wrote).")
@click.option("--summary", metavar="TEXT", help="One line saying what this version is.")
@click.option("--proposal", is_flag=True,
              help="Mark this version a proposal: accepted only by a decision (--accepts).")
@click.option("--link", "links", multiple=True, metavar="REF",
              help="What this version builds on: NAME@vN, status@vN or an entry id "
              "(repeatable; must exist).")
@click.option("--allow-empty", is_flag=True, help="Write an empty body (refused otherwise).")
@json_option
@sync_option
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
    body = read_body(file, ctx.record.config.body_limit, allow_empty)
    written = core.put(
        ctx.worker, name, body, expect=expect, summary=summary, proposal=proposal,
        links=links)
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
    warn_digest(doc)
    if not body_only:
        click.echo("\n".join(header(name, doc, marks)))
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
    at = timeutil.now()
    lines = [(t.name, f"{t.name:<24} v{t.version:<5} {age(t.written_at, at):>16}  "
                      f"{t.author:<14} {t.summary}{marks.get(state, '')}"
                      f"{list_marks(listing.marks[t.name])}")
             for t, state in rows]
    # A topic that cannot be read keeps its row: left out, it would look like no topic.
    lines += [(name, f"{name:<24} unreadable (see the warning above; `atlas check` tells "
                     "more)") for name in unreadable]
    # One write for the whole table: a record can hold thousands of topics.
    click.echo("\n".join(line for _, line in sorted(lines, key=lambda pair: pair[0])))


@click.command()
@click.argument("name")
@json_option
@pass_ctx
def history(ctx: Invocation, name: str, as_json: bool) -> None:
    """Every version of topic NAME, newest first."""
    print_versions(core.history(ctx.worker, name), as_json)


@click.command()
@click.argument("name")
@click.argument("old", required=False, type=click.IntRange(min=0))
@click.argument("new", required=False, type=click.IntRange(min=1))
@json_option
@pass_ctx
def diff(ctx: Invocation, name: str, old: int | None, new: int | None, as_json: bool) -> None:
    """Unified diff of topic NAME: OLD against NEW (default: the latest against the one
    before; with OLD alone, OLD against the latest; 0 is the empty text before v1)."""
    print_diff(core.diff(ctx.worker, name, old, new), as_json)


@click.command()
@click.option("--mark-read", is_flag=True, help="Mark everything listed as read.")
@json_option
@pass_ctx
def feed(ctx: Invocation, mark_read: bool, as_json: bool) -> None:
    """What is new to you (--as): every status and topic newer than the version you read.

    With --mark-read, a feed that cannot be marked read (a read-only or damaged receipts
    row) is listed, then refused: exit 2, nothing marked."""
    try:
        result = core.feed(ctx.worker, mark_read)
    except NotMarked as exc:
        if not as_json:
            click.echo("\n".join(_feed_lines(exc.items, [{}] * len(exc.items))))
        raise
    if as_json:
        emit_json(result.to_json())
        return
    items = result.items
    if not items:
        click.echo(f"nothing new to {ctx.identity}")
        return
    click.echo("\n".join(_feed_lines(items, result.marks)))
    if mark_read:
        click.echo(f"marked {len(items)} as read")


def _feed_lines(items: Sequence[FeedItem], marks: Sequence[dict[str, Any]]) -> list[str]:
    lines = []
    at = timeutil.now()
    for i, m in zip(items, marks, strict=True):
        what = f"{i.project}/status" if i.kind == "status" else f"{i.project}/{i.name}"
        seen = f"you read v{i.read_version}" if i.read_version else "never read"
        lines.append(f"{what:<32} v{i.version:<5} ({seen}) by {i.author}, "
                     f"{age(i.written_at, at)}: {i.summary}{list_marks(m)}")
    return lines
