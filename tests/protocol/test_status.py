"""The status stream: versioned like an artifact, led by its version, author and age."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record


def _hand_write_status(record: Record, version: int, author: str, written_at: str) -> None:
    body = f"picture number {version}\n".encode()
    meta = {"name": "status", "version": version, "based_on": version - 1, "author": author,
            "written_at": written_at, "summary": f"picture {version}",
            "digest": frontmatter.digest_of(body)}
    folder = record.root / "projects" / "web" / "status"
    (folder / f"status.v{version:04d}.md").write_bytes(frontmatter.render(meta, body))


def test_a_month_old_status_looks_month_old(record: Record, atlas: Callable[..., Any]) -> None:
    for v in range(1, 13):
        _hand_write_status(record, v, "editor", "2026-01-01T00:00:00Z")
    from datetime import UTC, datetime, timedelta

    then = datetime.now(UTC) - timedelta(days=31, hours=1)
    folder = record.root / "projects" / "web" / "status"
    (folder / "status.v0012.md").unlink()
    _hand_write_status(record, 12, "editor", then.strftime("%Y-%m-%dT%H:%M:%SZ"))
    r = atlas("status", "show", identity="reader")
    assert r.returncode == 0
    first = r.stdout.splitlines()[0]
    assert "v12, written 31 days ago by editor" in first
    data = atlas("status", "show", "--json").json()
    assert data["version"] == 12 and data["author"] == "editor"


def test_status_keeps_every_version(record: Record, atlas: Callable[..., Any]) -> None:
    for text in ("one\n", "two\n", "three\n"):
        assert atlas("status", "write", identity="ed", input=text).returncode == 0
    log = atlas("status", "log", "--json").json()
    assert [v["version"] for v in log["versions"]] == [3, 2, 1]
    assert atlas("status", "show", "--version", "1", "--json").json()["body"] == "one\n"
    d = atlas("status", "diff")
    assert "-two" in d.stdout and "+three" in d.stdout


def test_a_long_status_is_warned_not_refused(record: Record, atlas: Callable[..., Any]) -> None:
    r = atlas("status", "write", identity="ed", input="x" * 4001)
    assert r.returncode == 0
    assert "4001 characters" in r.stderr and "4000" in r.stderr
    r = atlas("status", "write", identity="ed", input="short\n")
    assert r.returncode == 0 and "warning" not in r.stderr


def test_no_status_yet_is_said_plainly(atlas: Callable[..., Any]) -> None:
    r = atlas("status", "show")
    assert r.returncode == 0 and "no status yet" in r.stdout
    assert atlas("status", "show", "--json").json()["version"] == 0
