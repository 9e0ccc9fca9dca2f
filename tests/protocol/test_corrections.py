"""Corrections and retractions show wherever the corrected item is read; the proposal gate."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.runner import Result, snapshot

from atlas_files.facts.errors import DamagedFile
from atlas_files.protocol import artifacts, corrections, decisions, status
from atlas_files.storage import entries
from atlas_files.storage.record import Record


def _decide(atlas: Callable[..., Result], *extra: str) -> str:
    r = atlas("decide", "--topic", "loader", "--recommended", "C", "--chosen", "Python",
              "--relation", "disagreed", "--why", "nobody reads C", "--json", *extra,
              identity="bob")
    assert r.returncode == 0, r.stderr
    return str(r.json()["id"])


def test_a_correction_shows_on_the_topic_version_in_get(
    atlas: Callable[..., Result], record: Record
) -> None:
    artifacts.put(record, "plan", "stages E and F are open\n", author="ann")
    artifacts.put(record, "plan", "stages E and F are closed\n", author="ann", expect=1)
    before = (record.root / "projects/web/artifacts/plan/plan.v0001.md").read_bytes()
    what = "Example 1 is my error: I wrote that stages E and F were open, having read a " \
           "broken README."
    r = atlas("correct", "plan@v1", "--what", what, identity="ann")
    assert r.returncode == 0, r.stderr

    got = atlas("get", "plan", "--version", "1", "--json").json()
    [mark] = got["corrected_by"]
    assert (mark["author"], mark["what"]) == ("ann", what)
    assert mark["id"].startswith("cor-") and got["retracted"] is None
    text = atlas("get", "plan", "--version", "1").stdout
    assert "CORRECTED by ann" in text and what in text
    # The corrected version itself is never touched, and v2 carries no mark.
    assert (record.root / "projects/web/artifacts/plan/plan.v0001.md").read_bytes() == before
    assert atlas("get", "plan", "--json").json()["corrected_by"] == []


def test_a_correction_shows_on_the_status_in_status_show(
    atlas: Callable[..., Result], record: Record
) -> None:
    status.write(record, "stages E and F are open\n", author="ann", project="ml")
    r = atlas("-p", "ml", "correct", "status@v1", "--what", "they were closed", identity="cy")
    assert r.returncode == 0, r.stderr
    got = atlas("-p", "ml", "status", "show", "--json").json()
    assert [(c["author"], c["what"]) for c in got["corrected_by"]] == [("cy", "they were closed")]
    text = atlas("-p", "ml", "status", "show").stdout
    assert "CORRECTED by cy" in text and "they were closed" in text
    # The web status has nothing to do with it.
    status.write(record, "web status\n", author="ann", project="web")
    assert atlas("-p", "web", "status", "show", "--json").json()["corrected_by"] == []


def test_a_correction_shows_on_the_decision_in_decisions(
    atlas: Callable[..., Result], record: Record
) -> None:
    first = _decide(atlas)
    second = _decide(atlas)
    r = atlas("correct", first, "--what", "the recommendation came from ann, not from bob",
              identity="bob")
    assert r.returncode == 0, r.stderr
    rows = {d["id"]: d for d in atlas("decisions", "--json").json()["decisions"]}
    [mark] = rows[first]["corrected_by"]
    assert (mark["author"], mark["what"]) == ("bob", "the recommendation came from ann, not "
                                              "from bob")
    assert rows[second]["corrected_by"] == []
    text = atlas("decisions").stdout
    block = text[text.index(first):text.index(second)]
    assert "CORRECTED" in block and "the recommendation came from ann" in block
    assert "CORRECTED" not in text[text.index(second):]


def test_a_correction_can_itself_be_corrected(record: Record) -> None:
    artifacts.put(record, "plan", "p\n", author="ann")
    c1 = corrections.correct(record, "plan@v1", what="v1 is wrong about E", author="ann")
    c2 = corrections.correct(record, c1.id, what="no, it was wrong about F", author="ann")
    assert [c.id for c in corrections.list_corrections(record)] == [c1.id, c2.id]
    assert corrections.corrections_of(record, "web", c1.id) == [c2]


def test_a_retracted_version_is_shown_as_retracted(
    atlas: Callable[..., Result], record: Record
) -> None:
    artifacts.put(record, "eval-results", "accuracy 0.81\n", author="carol")
    r = atlas("retract", "eval-results@v1", "--why", "the test set leaked into training",
              identity="carol")
    assert r.returncode == 0, r.stderr
    got = atlas("get", "eval-results", "--json").json()
    assert got["retracted"]["author"] == "carol"
    assert got["retracted"]["why"] == "the test set leaked into training"
    text = atlas("get", "eval-results").stdout
    assert "RETRACTED by carol" in text and "leaked" in text
    assert corrections.retracted_refs(record, "web") == {"eval-results@v1"}
    assert corrections.retracted_refs(record, "ml") == set()

    before = snapshot(record.root)
    again = atlas("retract", "eval-results@v1", "--why", "twice", identity="carol")
    assert again.returncode == 2 and "already retracted" in again.stderr
    assert "nothing was written" in again.stderr
    assert snapshot(record.root) == before


def test_a_decision_linking_a_retracted_version_is_warned_about(
    atlas: Callable[..., Result], record: Record
) -> None:
    artifacts.put(record, "eval-results", "accuracy 0.81\n", author="carol")
    corrections.retract(record, "eval-results@v1", why="leaked", author="carol")
    r = atlas("decide", "--topic", "ship", "--recommended", "ship", "--chosen", "ship",
              "--relation", "agreed", "--why", "0.81 is enough", "--link", "eval-results@v1",
              identity="bob")
    assert r.returncode == 0 and "retracted conclusion" in r.stderr


REFUSED = {
    "a version that does not exist": ("correct", "plan@v2", "--what", "w"),
    "a topic that does not exist": ("correct", "nothing@v1", "--what", "w"),
    "a status version that does not exist": ("correct", "status@v1", "--what", "w"),
    "an id that does not exist": (
        "correct", "dec-20261129t110512123456z-1a2b3c4d", "--what", "w"),
    "a correction id that does not exist": (
        "correct", "cor-20261129t110512123456z-1a2b3c4d", "--what", "w"),
    "no reference at all": ("correct", "plan", "--what", "w"),
    "no what": ("correct", "plan@v1"),
    "a blank what": ("correct", "plan@v1", "--what", "  "),
    "retract without why": ("retract", "plan@v1"),
    "retract a version that does not exist": ("retract", "plan@v9", "--why", "w"),
    "retract a decision": ("retract", "DECISION", "--why", "w"),
    "correct in another project": ("-p", "ml", "correct", "plan@v1", "--what", "w"),
}


@pytest.mark.parametrize("args", REFUSED.values(), ids=list(REFUSED))
def test_refused_corrections_exit_2_and_write_nothing(
    atlas: Callable[..., Result], record: Record, args: tuple[str, ...]
) -> None:
    artifacts.put(record, "plan", "p\n", author="ann")
    decision = decisions.decide(record, topic="t", recommended="r", chosen="c",
                                relation="agreed", why="w", author="ann")
    args = tuple(decision.id if a == "DECISION" else a for a in args)
    before = snapshot(record.root)
    r = atlas(*args, identity="ann")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("atlas: error: ") and "Traceback" not in r.stderr
    assert snapshot(record.root) == before


def test_a_hand_edit_of_a_decision_is_a_digest_mismatch(
    atlas: Callable[..., Result], record: Record
) -> None:
    first = _decide(atlas)
    second = _decide(atlas)
    path = record.root / "projects/web/decisions" / f"{first}.md"
    assert entries.read_entry(path).digest_ok is True
    os.chmod(path, 0o644)
    path.write_text(path.read_text().replace('"relation": "disagreed"', "x")
                    .replace('relation: "disagreed"', 'relation: "agreed"'))
    entry = entries.read_entry(path)
    assert entry.digest_ok is False and entry.meta["relation"] == "agreed"

    rows = {d["id"]: d for d in atlas("decisions", "--json").json()["decisions"]}
    assert rows[first]["digest_ok"] is False and rows[second]["digest_ok"] is True
    r = atlas("decisions")
    assert r.returncode == 0 and "edited after it was written" in r.stderr
    assert "EDITED" in r.stdout[r.stdout.index(first):r.stdout.index(second)]


def test_a_hand_edit_of_a_correction_is_a_digest_mismatch(record: Record) -> None:
    artifacts.put(record, "plan", "p\n", author="ann")
    c = corrections.correct(record, "plan@v1", what="v1 is wrong", author="ann")
    os.chmod(c.path, 0o644)
    c.path.write_text(c.path.read_text().replace("v1 is wrong", "v1 is right"))
    assert entries.read_entry(c.path).digest_ok is False
    [read] = corrections.list_corrections(record)
    assert read.digest_ok is False and read.text == "v1 is right"


def test_an_unreadable_entry_is_reported_and_the_rest_still_listed(
    atlas: Callable[..., Result], record: Record
) -> None:
    kept = _decide(atlas)
    broken = record.root / "projects/web/decisions/dec-20261129t110512123456z-1a2b3c4d.md"
    broken.write_text("not an entry at all\n")
    r = atlas("decisions", "--json")
    assert r.returncode == 0
    assert [d["id"] for d in r.json()["decisions"]] == [kept]
    assert len(r.json()["unreadable"]) == 1 and "left out" in r.stderr


def test_the_proposal_gate(atlas: Callable[..., Result], record: Record) -> None:
    artifacts.put(record, "plan", "a plain version\n", author="ann")
    r = atlas("put", "idea", "--proposal", "--summary", "read the claim store", input="x\n",
              identity="chat")
    assert r.returncode == 0, r.stderr

    def states(*args: str) -> dict[str, str]:
        topics = atlas("ls", "--json", *args).json()["topics"]
        return {t["name"]: t["state"] for t in topics}

    assert states() == {"plan": "", "idea": "proposed"}
    assert states("--accepted") == {"plan": ""}
    assert "[proposal]" in atlas("ls").stdout
    assert atlas("get", "idea", "--json").json()["accepted_by"] is None

    before = snapshot(record.root)
    for bad in ("plan@v1", "idea@v2", "status@v1", "idea"):
        r = atlas("decide", "--topic", "idea", "--recommended", "take it", "--chosen",
                  "take it", "--relation", "agreed", "--why", "w", "--accepts", bad,
                  identity="editor")
        assert r.returncode == 2 and r.stderr.startswith("atlas: error: "), bad
    assert snapshot(record.root) == before

    decision = _decide(atlas, "--accepts", "idea@v1")
    assert states() == {"plan": "", "idea": "accepted"}
    assert states("--accepted") == {"plan": "", "idea": "accepted"}
    assert "[accepted]" in atlas("ls").stdout
    assert atlas("get", "idea", "--json").json()["accepted_by"] == decision
    assert f"ACCEPTED by decision {decision}" in atlas("get", "idea").stdout
    log = atlas("decisions", "--json").json()["decisions"]
    assert log[-1]["accepts"] == "idea@v1"


def test_a_retracted_proposal_cannot_be_accepted(
    atlas: Callable[..., Result], record: Record
) -> None:
    artifacts.put(record, "idea", "x\n", author="chat", proposal=True)
    corrections.retract(record, "idea@v1", why="superseded by a better idea", author="chat")
    before = snapshot(record.root)
    r = atlas("decide", "--topic", "idea", "--recommended", "a", "--chosen", "a",
              "--relation", "agreed", "--why", "w", "--accepts", "idea@v1", identity="ed")
    assert r.returncode == 2 and "retracted" in r.stderr
    assert snapshot(record.root) == before


def test_marks_follow_new_entries_within_one_process(record: Record) -> None:
    """The per-process cache never hides an entry written after the first read."""
    artifacts.put(record, "plan", "p\n", author="ann")
    assert corrections.marks_json(record, "web", "artifact", "plan", 1)["corrected_by"] == []
    corrections.correct(record, "plan@v1", what="first", author="ann")
    corrections.correct(record, "plan@v1", what="second", author="bob")
    marks = corrections.marks_json(record, "web", "artifact", "plan", 1)
    assert [m["what"] for m in marks["corrected_by"]] == ["first", "second"]
    corrections.retract(record, "plan@v1", why="gone", author="ann")
    assert corrections.marks_json(record, "web", "artifact", "plan", 1)["retracted"]["why"] \
        == "gone"


def test_an_entry_that_is_a_symlink_is_never_followed(
    atlas: Callable[..., Result], record: Record, tmp_path: Path
) -> None:
    kept = _decide(atlas)
    outside = tmp_path / "outside.md"
    outside.write_bytes((record.root / "projects/web/decisions" / f"{kept}.md").read_bytes())
    link = record.root / "projects/web/decisions/dec-20261129t110512123456z-1a2b3c4d.md"
    link.symlink_to(outside)
    assert [d["id"] for d in atlas("decisions", "--json").json()["decisions"]] == [kept]
    with pytest.raises(DamagedFile):
        entries.read_entry(link)


def test_two_retractions_that_both_landed_are_both_listed_the_earliest_shown(
    record: Record, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "already retracted" refusal is a read before a write: a rival retraction can
    land between the two. Both are kept; every reader lists both and shows the earliest."""
    import contextlib
    import io

    from atlas_files.cli import main

    artifacts.put(record, "plan", "p\n", author="ann")
    publish = entries.publish
    rival: list[str] = []

    def rival_first(folder: Path, kind: str, fields: dict[str, object], body: str = "",
                    **opened: Any) -> Any:
        if kind == "retraction" and not rival:  # bob's write lands between check and write
            rival.append(publish(folder, kind, {**fields, "author": "bob",
                                                "why": "bob saw it too"}, **opened).id)
        return publish(folder, kind, fields, body, **opened)

    monkeypatch.setattr(entries, "publish", rival_first)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            pytest.raises(SystemExit) as exit_:
        main(["--record", str(record.root), "--as", "ann", "retract", "plan@v1", "--why",
              "the numbers were wrong", "--json"])
    assert exit_.value.code == 0, err.getvalue()
    mine = json.loads(out.getvalue())
    assert [r["id"] for r in mine["retractions"]] == [rival[0], mine["id"]]
    assert f"retracted at the same time by bob ({rival[0]})" in err.getvalue()

    marks = corrections.marks_json(record, "web", "artifact", "plan", 1)
    assert [(m["author"], m["why"]) for m in marks["retractions"]] == [
        ("bob", "bob saw it too"), ("ann", "the numbers were wrong")]
    assert marks["retracted"] == marks["retractions"][0]
    assert corrections.retraction_of(record, "web", "plan@v1").id == rival[0]  # type: ignore
    assert [c.kind for c in corrections.list_corrections(record)] == ["retraction"] * 2


def test_no_message_or_doc_promises_a_single_retraction() -> None:
    """Two concurrent retractions can both land, so nothing may say there is only one."""
    from atlas_files.cli.decisions import retract

    docs = (Path(__file__).parents[2] / "docs" / "decisions.md").read_text()
    assert "twice is refused" not in docs
    assert "both land" in docs and "both land" in (retract.help or "")


def test_resolve_refs_is_the_one_check_for_links(
    atlas: Callable[..., Result], record: Record
) -> None:
    """What `decide --link` (and `put --link`) accept: versions and entries that exist in
    the project, in canonical form, each once; anything else is refused, nothing written."""
    from atlas_files.facts.errors import BadInput, NotFound

    artifacts.put(record, "plan", "p\n", author="ann")
    status.write(record, "s\n", author="ann")
    dec = _decide(atlas)
    cor = corrections.correct(record, "plan@v1", what="typo", author="ann").id
    before = snapshot(record.root)
    assert corrections.resolve_refs(record, "web", [" plan@v0001", "status@v1", dec, cor,
                                                    "plan@v1"]) == [
        "plan@v1", "status@v1", dec, cor]
    assert corrections.resolve_refs(record, "web", "plan@v1") == ["plan@v1"]
    for bad, error in (("plan@v2", NotFound), ("nosuch@v1", NotFound),
                       ("status@v9", NotFound), (dec.replace("dec-", "cor-"), NotFound),
                       ("plan@v0", BadInput), ("plan", BadInput), ("", BadInput),
                       ("../x@v1", BadInput), ("PLAN@v1", BadInput),
                       ("plan@v1" + " " * 300 + "x" * 100_000, BadInput)):
        with pytest.raises(error) as caught:
            corrections.resolve_refs(record, "web", ["plan@v1", bad], "--link")
        assert caught.value.message.startswith("--link"), (bad, caught.value.message)
        assert len(caught.value.message) < 400  # never the pasted text echoed back
    with pytest.raises(NotFound):
        corrections.resolve_refs(record, "ml", [dec])  # a decision of another project
    with pytest.raises(BadInput):
        corrections.resolve_refs(record, "web", ["plan@v1"] * 51)
    assert snapshot(record.root) == before


def test_every_listing_marks_a_corrected_or_retracted_version(
    atlas: Callable[..., Result], record: Record
) -> None:
    # The README: "marked wherever it is shown". `get` and the site always were; the
    # listings a reader scans first (ls, feed, history, status log) now are too, with the
    # same keys as `get --json`.
    artifacts.put(record, "plan", "v1\n", author="ann", project="web")
    artifacts.put(record, "plan", "v2\n", author="ann", project="web", expect=1)
    status.write(record, "all good\n", author="ann", project="web")
    assert atlas("correct", "plan@v1", "--what", "wrong count", identity="bob").returncode == 0
    assert atlas("retract", "plan@v2", "--why", "leaked data", identity="cy").returncode == 0
    assert atlas("correct", "status@v1", "--what", "not good", identity="bob").returncode == 0
    fixed = {"author": "bob", "what": "wrong count"}
    gone = {"author": "cy", "why": "leaked data"}

    def mark(row: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str] | None]:
        retracted = row["retracted"]
        return ([{k: c[k] for k in ("author", "what")} for c in row["corrected_by"]],
                retracted and {k: retracted[k] for k in ("author", "why")})

    [topic] = atlas("ls", "--json").json()["topics"]
    assert mark(topic) == ([], gone)
    history = {v["version"]: mark(v) for v in atlas("history", "plan", "--json").json()["versions"]}
    assert history == {2: ([], gone), 1: ([fixed], None)}
    [log] = atlas("status", "log", "--json").json()["versions"]
    assert mark(log) == ([{"author": "bob", "what": "not good"}], None)
    feed = {i["name"]: mark(i) for i in atlas("feed", "--json", identity="dan").json()["new"]}
    assert feed == {"plan": ([], gone), "status": ([{"author": "bob", "what": "not good"}], None)}

    assert "[RETRACTED by cy]" in atlas("ls").stdout
    lines = atlas("history", "plan").stdout.splitlines()
    assert lines[0].startswith("v2") and lines[0].endswith("[RETRACTED by cy]")
    assert lines[1].startswith("v1") and lines[1].endswith("[CORRECTED by bob]")
    assert atlas("status", "log").stdout.rstrip().endswith("[CORRECTED by bob]")
    feed_text = atlas("feed", identity="dan").stdout
    assert "[RETRACTED by cy]" in feed_text and "[CORRECTED by bob]" in feed_text
    # A version nobody corrected carries the empty marks, as in `get`.
    artifacts.put(record, "notes", "fine\n", author="ann", project="web")
    rows = {t["name"]: t for t in atlas("ls", "--json").json()["topics"]}
    assert (rows["notes"]["corrected_by"], rows["notes"]["retracted"]) == ([], None)
    assert "[" not in atlas("history", "notes").stdout
