"""`atlas search`: what a reader finds, how it is ranked and marked, and what is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from support.runner import run_atlas

from atlas_files.facts.errors import BadInput
from atlas_files.protocol import artifacts, corrections, decisions, status
from atlas_files.search import search
from atlas_files.storage.record import Record

KEYS = {"kind", "project", "name", "version", "id", "author", "written_at", "snippet", "marks"}


def ids(doc: dict[str, Any]) -> list[str]:
    return [r["id"] for r in doc["results"]]


def decide(record: Record, why: str, topic: str = "routine", **kw: Any) -> decisions.Decision:
    return decisions.decide(record, topic=topic, recommended="a", chosen="b",
                            relation=kw.pop("relation", "agreed"), why=why, author="ann", **kw)


def test_a_why_written_fifty_decisions_ago_outranks_a_passing_mention(record: Record) -> None:
    old = decide(record, "the shared runner showed quillwort flakiness under load",
                 topic="Which CI runner", relation="disagreed")
    for i in range(50):
        decide(record, f"routine choice number {i}, nothing unusual")
    filler = " ".join(f"word{i}" for i in range(400))
    artifacts.put(record, "notes", f"{filler} quillwort {filler}\n", author="bob")
    fix = corrections.correct(record, old.id, what="it was the network, not the runner",
                              author="cy")

    doc = search(record, "quillwort")
    assert ids(doc) == [old.id, "notes@v1"]
    hit = doc["results"][0]
    assert set(hit) == KEYS
    assert hit["kind"] == "decision" and hit["name"] == "Which CI runner"
    assert hit["version"] is None and hit["author"] == "ann"
    assert "why: " in hit["snippet"] and "**quillwort**" in hit["snippet"]
    assert hit["marks"]["relation"] == "disagreed"
    assert [c["id"] for c in hit["marks"]["corrected"]] == [fix.id]
    assert hit["marks"]["corrected"][0]["what"] == "it was the network, not the runner"
    assert doc["results"][1]["marks"] == {}


def test_retracted_version_is_found_and_marked_superseded_only_with_all_versions(
        record: Record) -> None:
    artifacts.put(record, "plan", "use the alpha queue\n", author="ann")
    assert ids(search(record, "alpha")) == ["plan@v1"]  # v1 is in the index from here on
    artifacts.put(record, "plan", "use the beta queue\n", author="ann", expect=1)
    corrections.retract(record, "plan@v2", why="beta lost messages", author="bob")

    beta = search(record, "beta")["results"]
    assert [(r["id"], r["kind"]) for r in beta[:1]] == [("plan@v2", "artifact")]
    assert beta[0]["marks"]["retracted"]["why"] == "beta lost messages"
    assert "superseded" not in beta[0]["marks"]

    assert ids(search(record, "alpha")) == []
    old = search(record, "alpha", all_versions=True)["results"]
    assert [r["id"] for r in old] == ["plan@v1"]
    assert old[0]["marks"] == {"superseded": {"newest_version": 2}}
    # The retraction itself is searchable, and `--kind correction` covers retractions.
    found = search(record, "lost messages", kinds=["correction"])["results"]
    assert [(r["kind"], r["name"]) for r in found] == [("retraction", "plan@v2")]


def test_status_every_version_and_its_corrections(record: Record) -> None:
    status.write(record, "deploy frozen until friday\n", author="ann")
    status.write(record, "deploy open again\n", author="ann", expect=1)
    corrections.correct(record, "status@v2", what="it opens monday", author="bob")

    now = search(record, "deploy", kinds=["status"])["results"]
    assert [(r["id"], r["name"], r["version"]) for r in now] == [("status@v2", "status", 2)]
    assert now[0]["marks"]["corrected"][0]["what"] == "it opens monday"
    every = search(record, "deploy", kinds=["status"], all_versions=True)
    assert sorted(ids(every)) == ["status@v1", "status@v2"]


def test_open_proposal_then_accepted(record: Record) -> None:
    artifacts.put(record, "idea", "switch to postgres\n", author="ann", proposal=True)
    assert search(record, "postgres")["results"][0]["marks"] == {"proposal": {"state": "open"}}
    d = decide(record, "postgres fits", accepts="idea@v1")
    marks = {r["id"]: r["marks"] for r in search(record, "postgres")["results"]}
    assert marks["idea@v1"] == {"proposal": {"state": "accepted", "by": d.id}}


def test_query_language_words_phrases_prefixes(record: Record) -> None:
    artifacts.put(record, "a", "the blue green deploy\n", author="ann")
    artifacts.put(record, "b", "green then blue, never deploy\n", author="ann")
    artifacts.put(record, "c", "Déploiement café\n", author="ann")
    assert sorted(ids(search(record, "blue deploy"))) == ["a@v1", "b@v1"]
    assert ids(search(record, '"blue green"')) == ["a@v1"]
    assert ids(search(record, '"blue-green"')) == ["a@v1"]  # punctuation separates words
    assert sorted(ids(search(record, "depl*"))) == ["a@v1", "b@v1", "c@v1"]
    assert ids(search(record, "CAFE deploiement")) == ["c@v1"]  # case and accents folded
    assert ids(search(record, "blue purple")) == []  # every word must match


def test_kinds_projects_and_limit(record: Record) -> None:
    artifacts.put(record, "plan", "kestrel\n", author="ann")
    artifacts.put(record, "plan", "kestrel in ml\n", author="ann", project="ml")
    decide(record, "kestrel won")
    assert ids(search(record, "kestrel", kinds=["artifact"])) == ["plan@v1"]
    assert {r["project"] for r in search(record, "kestrel", project="ml")["results"]} == {"ml"}
    everywhere = search(record, "kestrel", all_projects=True)["results"]
    assert sorted(r["project"] for r in everywhere) == ["ml", "web", "web"]
    assert len(search(record, "kestrel", all_projects=True, limit=2)["results"]) == 2


@pytest.mark.parametrize("query", ['"unbalanced', "*", "-", ":", "", "   ", "**", '""',
                                   "x" * 10_000, "a\x1bb", "a\x00b"])
def test_queries_that_cannot_be_understood_exit_2_with_a_hint(record: Record,
                                                              query: str) -> None:
    code, out, err = run_atlas("--record", str(record.root), "search", "--", query)
    assert code == 2 and out == ""
    assert err.startswith("atlas: error: ") and "atlas: hint: " in err
    assert "Traceback" not in err


@pytest.mark.parametrize("query", ["NEAR(", "NEAR(a b)", "title:x", "head:x", "a OR b",
                                   "NOT a", "a AND", "(a", "^a", "a + b", "{a b}"])
def test_fts_syntax_is_just_words(record: Record, query: str) -> None:
    artifacts.put(record, "plan", "near a title head not and or b\n", author="ann")
    code, out, err = run_atlas("--record", str(record.root), "search", "--json", "--", query)
    assert code == 0, err
    assert json.loads(out)["query"] == query


def test_bad_options_exit_2(record: Record) -> None:
    for argv in (["--limit", "0"], ["--limit", "5000"], ["--kind", "topic"],
                 ["--project", "web", "--all-projects"], ["--project", "nope"]):
        code, _, err = run_atlas("--record", str(record.root), "search", "x", *argv)
        assert code == 2 and "Traceback" not in err, argv
    with pytest.raises(BadInput):
        search(record, "x", kinds=["topic"])


def test_text_output_says_what_each_result_is(record: Record) -> None:
    artifacts.put(record, "plan", "use the alpha queue\n", author="ann")
    artifacts.put(record, "plan", "use the beta queue\n", author="ann", expect=1)
    corrections.retract(record, "plan@v1", why="alpha is gone", author="bob")
    d = decide(record, "alpha was cheaper", topic="queue", relation="timed-out")
    code, out, err = run_atlas("--record", str(record.root), "search", "--all-versions", "alpha")
    assert code == 0, err
    assert d.id in out and "[timed-out]" in out and "topic: queue" in out
    assert "plan@v1" in out and "[retracted by bob]" in out and "[superseded by v2]" in out
    assert "**alpha**" in out and "RETRACTED by bob" in out
    code, out, _ = run_atlas("--record", str(record.root), "search", "nothing-like-it")
    assert code == 0 and out.startswith("no results for")


def test_json_document_and_global_project_env(record: Record) -> None:
    artifacts.put(record, "plan", "kestrel\n", author="ann", project="ml")
    result = run_atlas("search", "--json", "--all-projects", "kestrel", record=record.root,
                       env={"ATLAS_PROJECT": "web"})
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert set(doc) == {"query", "results"} and doc["query"] == "kestrel"
    assert [set(r) for r in doc["results"]] == [KEYS]
    assert run_atlas("search", "--json", "kestrel", record=record.root,
                     env={"ATLAS_PROJECT": "ml"}).json()["results"][0]["project"] == "ml"


def test_control_characters_in_a_hand_written_file_never_reach_the_terminal(
        record: Record) -> None:
    v = artifacts.put(record, "plan", "ok\n", author="ann")
    v.path.chmod(0o644)
    v.path.write_bytes(v.path.read_bytes().replace(b"ok\n", b"evil \x1b[2J kestrel\n"))
    snippet = search(record, "kestrel")["results"][0]["snippet"]
    assert snippet == "evil [2J **kestrel**"
    code, out, _ = run_atlas("--record", str(record.root), "search", "kestrel")
    assert code == 0 and "kestrel" in out and "\x1b" not in out


def test_other_commands_never_import_sqlite(record: Record) -> None:
    code = ("import sys; from atlas_files.cli import main\n"
            "try:\n    main(['status', 'show'])\nexcept SystemExit:\n    pass\n"
            "print('sqlite3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"ATLAS_RECORD": str(record.root), "PATH": ""}, check=True)
    assert out.stdout.strip().endswith("False")
