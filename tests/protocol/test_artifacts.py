"""The artifact channel through the real CLI: put, get, ls, history, diff, JSON keys."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_files.protocol import artifacts
from atlas_files.protocol import feed as feedmod
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record


def test_put_get_ls_history_diff(record: Record, atlas: Callable[..., Any]) -> None:
    r = atlas("put", "plan", "--json", "--summary", "first", identity="ann", input="a\nb\n")
    assert r.returncode == 0
    out = r.json()
    assert set(out) >= {"name", "version", "path"} and out["version"] == 1
    path = record.root / "projects" / "web" / "artifacts" / "plan" / "plan.v0001.md"
    assert os.path.samefile(out["path"], path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    parsed = frontmatter.parse(path.read_bytes())
    assert parsed.digest_ok is True and parsed.body == b"a\nb\n"
    assert parsed.meta["author"] == "ann" and parsed.meta["based_on"] == 0
    atlas("put", "plan", identity="ann", input="a\nc\n")
    got = atlas("get", "plan", "--json").json()
    for key in ("name", "version", "author", "written_at", "based_on", "summary", "body",
                "corrected_by", "retracted"):
        assert key in got
    assert got["version"] == 2 and got["body"] == "a\nc\n" and got["based_on"] == 1
    text = atlas("get", "plan").stdout
    assert text.splitlines()[0].startswith("plan v2, written just now by ann")
    assert atlas("get", "plan", "--body-only").stdout == "a\nc\n"
    ls = atlas("ls", "--json").json()
    assert [t["name"] for t in ls["topics"]] == ["plan"]
    assert set(ls["topics"][0]) >= {"name", "version", "author", "written_at", "summary",
                                    "proposal"}
    hist = atlas("history", "plan", "--json").json()
    assert [v["version"] for v in hist["versions"]] == [2, 1]
    d = atlas("diff", "plan").stdout
    assert "--- plan@v1" in d and "-b" in d and "+c" in d
    assert "+a" in atlas("diff", "plan", "0", "1").stdout


def test_body_from_a_file(record: Record, atlas: Callable[..., Any], tmp_path: Any) -> None:
    f = tmp_path / "handoff.md"
    f.write_text("# Handoff\n\nall done\n")
    assert atlas("put", "handoff", "-f", str(f), identity="ann").returncode == 0
    doc = artifacts.get(record, "handoff")
    assert doc.body == "# Handoff\n\nall done\n" and doc.summary == "Handoff"


def test_projects_are_separate(record: Record, atlas: Callable[..., Any]) -> None:
    atlas("-p", "ml", "put", "plan", identity="ann", input="ml plan\n")
    assert atlas("ls", "--json").json()["topics"] == []
    assert atlas("-p", "ml", "ls", "--json").json()["topics"][0]["name"] == "plan"
    r = atlas("-p", "nope", "ls")
    assert r.returncode == 2 and "no project 'nope'" in r.stderr


def test_init_writes_readme_gitignore_and_adds_projects(record: Record,
                                                        atlas: Callable[..., Any]) -> None:
    readme = (record.root / "README.md").read_text()
    assert "Read first, write last" in readme and "stop sign" in readme
    gitignore = (record.root / ".gitignore").read_text()
    assert "receipts/" in gitignore and "telemetry/" in gitignore
    atlas("put", "plan", identity="ann", input="keep me\n")
    r = atlas("init", str(record.root), "--project", "ops")
    assert r.returncode == 0
    assert Record(record.root).config.projects == ("web", "ml", "ops")
    assert artifacts.get(Record(record.root), "plan").body == "keep me\n"


def test_readers_find_versions_the_latest_hint_does_not_know(record: Record) -> None:
    from atlas_files.facts.layout import LATEST_HINTS

    for text in ("one\n", "two\n"):
        artifacts.put(record, "plan", text, author="ann")
    folder = record.root / "projects" / "web" / "artifacts" / "plan"
    # A hand-written v3 that no hint mentions (as an agent with file access would add it).
    body = b"three, by hand\n"
    meta = {"name": "plan", "version": 3, "based_on": 2, "author": "hand",
            "written_at": "2026-11-29T10:00:00Z", "summary": "by hand"}
    (folder / "plan.v0003.md").write_bytes(frontmatter.render(meta, body))
    assert [t.version for t in artifacts.ls(record, )] == [3]
    assert artifacts.get(record, "plan").body == "three, by hand\n"
    hints = folder.parent / LATEST_HINTS
    for junk in (b"garbage", b'{"plan": 99}', b'{"plan": 0}', b"", b'{"plan": "x"}', b"[]"):
        hints.write_bytes(junk)
        assert [t.version for t in artifacts.ls(record, )] == [3]
    assert json.loads(hints.read_text())["plan"][0] == 3, "a reader repairs the hint"
    hints.unlink()
    assert [i.version for i in feedmod.feed(record, "newcomer")] == [3]
    # Writers never trust the hint: the stop sign still sees v3.
    hints.write_bytes(b'{"plan": 1}')
    artifacts.get(record, "plan", reader="bob", version=2)
    import pytest

    from atlas_files.facts.errors import VersionConflict

    with pytest.raises(VersionConflict, match="v3 by hand"):
        artifacts.put(record, "plan", "stale\n", author="bob")


def test_listings_believe_a_kept_front_matter_only_for_the_very_file(
        record: Record) -> None:
    """`ls`, `feed` and `begin` keep each latest version's front matter in the hints; a
    version file replaced since (as `atlas sync` replaces one that lost a race) or edited
    in place is read again, and a hint naming another file is no hint."""
    from atlas_files.facts.layout import LATEST_HINTS

    artifacts.put(record, "plan", "one\n", author="ann", summary="ann's plan")
    assert [(t.author, t.summary) for t in artifacts.ls(record)] == [("ann", "ann's plan")]
    hints = record.root / "projects" / "web" / "artifacts" / LATEST_HINTS
    kept = json.loads(hints.read_text())["plan"]
    assert kept[0] == 1 and kept[4:7] == ["ann", kept[5], "ann's plan"]
    assert [(t.author, t.summary) for t in artifacts.ls(record)] == [("ann", "ann's plan")]
    version = record.root / "projects" / "web" / "artifacts" / "plan" / "plan.v0001.md"
    meta = {"name": "plan", "version": 1, "based_on": 0, "author": "bob",
            "written_at": "2026-11-29T10:00:00Z", "summary": "bob's plan"}
    replaced = version.with_name(".replacing")
    replaced.write_bytes(frontmatter.render(meta, b"bob's\n"))
    os.replace(replaced, version)  # a new file under the same name
    assert [(t.author, t.summary) for t in artifacts.ls(record)] == [("bob", "bob's plan")]
    assert [i.author for i in feedmod.feed(record, "carl")] == ["bob"]
    # Edited in place, the same inode and size: its time moved (past the file system's
    # tick), so it is read again.
    os.chmod(version, 0o644)
    time.sleep(0.05)
    with open(version, "r+b") as fh:
        edited = fh.read().replace(b"bob's plan", b"eve's plan")
        fh.seek(0)
        fh.write(edited)
    assert [t.summary for t in artifacts.ls(record)] == ["eve's plan"]
    # A hint whose file identity is not the file's: its front matter is not believed.
    forged = json.loads(hints.read_text())
    forged["plan"][4] = "mallory"
    forged["plan"][2] = "1" + forged["plan"][2]
    hints.write_text(json.dumps(forged))
    assert [t.author for t in artifacts.ls(record)] == ["bob"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=7) | st.dictionaries(
        st.sampled_from(["v", "id", "head", "plan", "x"]), inner, max_size=4),
    max_leaves=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(value=JSON_VALUES)
def test_any_hints_file_leaves_listings_as_they_are(record: Record, value: Any) -> None:
    from atlas_files.facts.layout import LATEST_HINTS

    if not artifacts.ls(record):
        artifacts.put(record, "plan", "one\n", author="ann", summary="s1")
        artifacts.put(record, "plan", "two\n", author="bob", summary="s2", expect=1)
    truth = [t.to_json() for t in artifacts.ls(record)]
    hints = record.root / "projects" / "web" / "artifacts" / LATEST_HINTS
    hints.write_text(json.dumps({"plan": value}), encoding="utf-8")
    assert [t.to_json() for t in artifacts.ls(record)] == truth
    shown = ("name", "version", "author", "written_at", "summary")
    assert [{k: i.to_json()[k] for k in shown} for i in feedmod.feed(record, "carl")] == [
        {k: truth[0][k] for k in shown}]


def test_ls_accepted_shows_what_stands(record: Record, atlas: Callable[..., Any]) -> None:
    atlas("put", "plan", identity="ann", input="settled plan\n")
    atlas("put", "plan", "--proposal", identity="ann", input="a bolder plan\n")
    atlas("put", "idea", "--proposal", identity="ann", input="only an idea\n")
    rows = {t["name"]: t for t in atlas("ls", "--json").json()["topics"]}
    assert rows["plan"]["version"] == 2 and rows["plan"]["state"] == "proposed"
    assert rows["idea"]["state"] == "proposed"
    assert "[proposal]" in atlas("ls").stdout
    standing = atlas("ls", "--accepted", "--json").json()["topics"]
    assert [(t["name"], t["version"]) for t in standing] == [("plan", 1)]
    r = atlas("decide", "--topic", "plan", "--recommended", "bolder", "--chosen", "bolder",
              "--relation", "agreed", "--why", "it reads well", "--accepts", "plan@v2",
              identity="bob")
    assert r.returncode == 0, r.stderr
    standing = atlas("ls", "--accepted", "--json").json()["topics"]
    assert [(t["name"], t["version"], t["state"]) for t in standing] == [
        ("plan", 2, "accepted")
    ]


def test_a_whole_version_file_given_as_the_body_is_written_as_its_body(
        record: Record, atlas: Callable[..., Any]) -> None:
    """A sync draft (its hint says `-f MERGED_FILE`) or a copied version file, given to put:
    its front matter must not end up inside the new body."""
    atlas("put", "plan", identity="ann", input="first\n")
    atlas("put", "plan", "--expect", "1", identity="bob", input="second\n")
    v2 = record.root / "projects" / "web" / "artifacts" / "plan" / "plan.v0002.md"
    r = atlas("put", "plan", "--expect", "2", identity="ann", input=v2.read_text() + "merged\n")
    assert r.returncode == 0, r.stderr
    assert "front matter of plan v2" in r.stderr and "warning" in r.stderr
    assert atlas("get", "plan", "--body-only").stdout == "second\nmerged\n"
    # The same for the status; and a page's own front matter (not a version's) is kept.
    page = "---\ntitle: A page\n---\n# Text\n"
    atlas("put", "page", identity="ann", input=page)
    assert atlas("get", "page", "--body-only").stdout == page
    atlas("status", "write", identity="ann", input="s1\n")
    s1 = record.root / "projects" / "web" / "status" / "status.v0001.md"
    r = atlas("status", "write", "--expect", "1", identity="ann", input=s1.read_text())
    assert r.returncode == 0 and "front matter of status v1" in r.stderr
    assert atlas("status", "show", "--json").json()["body"] == "s1\n"


def test_a_link_to_a_retracted_version_is_written_and_warned_of(
        record: Record, atlas: Callable[..., Any]) -> None:
    atlas("put", "race", identity="ann", input="result\n")
    atlas("retract", "race@v1", "--why", "the run was wrong", identity="ann")
    r = atlas("put", "summary", "--link", "race@v1", identity="bob", input="see race\n")
    assert r.returncode == 0
    assert "links race@v1, which is retracted" in r.stderr and "ATL013" in r.stderr
    assert "retracted" not in atlas("put", "other", "--link", "summary@v1", identity="bob",
                                     input="x\n").stderr


def test_published_versions_and_receipts_have_their_modes_under_any_umask(
        tmp_path: Path) -> None:
    # A temp file is made with its final mode and chmodded only where the umask took bits
    # away: under a strict umask a version must still be read-only for everyone, and the
    # receipt row readable, as under the usual one.
    record = Record.init(tmp_path / "rec", ["web"])
    script = ("import os, sys; os.umask(int(sys.argv[2], 8)); "
              "from atlas_files.protocol import artifacts; from atlas_files.storage.record import "
              "Record; "
              "artifacts.put(Record(sys.argv[1]), 'plan', 'text\\n', author='ann')")
    modes = {}
    for umask in ("022", "077", "277"):
        subprocess.run([sys.executable, "-c", script, str(record.root), umask], check=True)
        version = max((record.root / "projects" / "web" / "artifacts" / "plan").glob("*.md"))
        modes[umask] = (stat.S_IMODE(version.stat().st_mode),
                        stat.S_IMODE((record.root / "receipts" / "ann.json").stat().st_mode))
    assert modes == {"022": (0o444, 0o644), "077": (0o444, 0o644), "277": (0o444, 0o644)}
