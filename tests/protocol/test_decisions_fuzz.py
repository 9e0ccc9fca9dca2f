"""Fuzzed input to `atlas decide`: exit 0 with a valid entry, or exit 2 with a plain
message and nothing written. Never a traceback."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runner import snapshot

from atlas_files.cli import main
from atlas_files.facts.errors import BadInput
from atlas_files.protocol import artifacts, decisions
from atlas_files.storage import entries
from atlas_files.storage.record import Record

text = st.text(max_size=40) | st.sampled_from(["", " ", "\n", "plan@v1", "status@v1",
                                                "idea@v1", "x@v0", "ann", "a\x00b",
                                                "a\r\nb", "\ud800x", "a\u2028b"])
relation = text | st.sampled_from(["agreed", "disagreed", "timed-out", "Agreed", " agreed"])
# Well-formed but otherwise arbitrary text: any letters, marks, symbols and spaces.
printable = st.builds(
    str.__add__, st.sampled_from(["x", "Ünïcødé ", "plan: "]),
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=60))
multiline = st.lists(printable, min_size=1, max_size=3).map("\n".join)


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:  # pragma: no cover - main always exits
            code = 0
    return code, err.getvalue()


def _fresh(tmp: Path) -> Record:
    record = Record.init(tmp / "rec", ["web"])
    artifacts.put(record, "plan", "p\n", author="ann")
    artifacts.put(record, "idea", "i\n", author="ann", proposal=True)
    return record


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=text, recommended=text, chosen=text, rel=relation, why=text,
       link=st.none() | text, accepts=st.none() | text, by=st.none() | text)
def test_decide_never_gives_a_traceback(
    tmp_path_factory: object, topic: str, recommended: str, chosen: str, rel: str, why: str,
    link: str | None, accepts: str | None, by: str | None,
) -> None:
    record = _fresh(tmp_path_factory.mktemp("fuzz"))  # type: ignore[attr-defined]
    argv = ["--record", str(record.root), "--as", "bob", "decide", "--topic", topic,
            "--recommended", recommended, "--chosen", chosen, "--relation", rel, "--why", why]
    for flag, value in (("--link", link), ("--accepts", accepts), ("--recommended-by", by)):
        if value is not None:
            argv += [flag, value]
    before = snapshot(record.root)
    code, err = _run(argv)
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("atlas: error: ") and len(err.splitlines()) <= 2
        assert snapshot(record.root) == before
        return
    [d] = decisions.list_decisions(record)
    assert entries.validate(entries.read_entry(d.path)) == []


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=printable, recommended=multiline, chosen=multiline, why=multiline,
       rel=st.sampled_from(["agreed", "disagreed", "timed-out"]),
       links=st.lists(st.sampled_from(["plan@v1", "idea@v1"]), max_size=2),
       accepts=st.none() | st.just("idea@v1"), by=st.none() | st.just("carol.b"))
def test_any_well_formed_decision_is_kept_exactly(
    tmp_path_factory: object, topic: str, recommended: str, chosen: str, why: str, rel: str,
    links: list[str], accepts: str | None, by: str | None,
) -> None:
    record = _fresh(tmp_path_factory.mktemp("ok"))  # type: ignore[attr-defined]
    argv = ["--record", str(record.root), "--as", "bob", "decide", "--topic", topic,
            "--recommended", recommended, "--chosen", chosen, "--relation", rel, "--why", why]
    for link in links:
        argv += ["--link", link]
    if accepts:
        argv += ["--accepts", accepts]
    if by:
        argv += ["--recommended-by", by]
    code, err = _run(argv)
    assert code == 0, err
    [d] = decisions.list_decisions(record)
    assert (d.topic, d.recommended, d.chosen, d.why, d.relation) == (
        topic.strip(), recommended.strip(), chosen.strip(), why.strip(), rel)
    assert (list(d.links), d.accepts, d.recommended_by) == (
        list(dict.fromkeys(links)), accepts, by)
    entry = entries.read_entry(d.path)
    assert entry.digest_ok is True and entries.validate(entry) == []


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=printable | text, rel=relation, why=multiline | text,
       links=st.lists(st.sampled_from(["plan@v1", "idea@v1"]) | text, max_size=3))
def test_library_decide_raises_only_bad_input(
    tmp_path_factory: object, topic: str, rel: str, why: str, links: list[str]
) -> None:
    record = _fresh(tmp_path_factory.mktemp("lib"))  # type: ignore[attr-defined]
    try:
        d = decisions.decide(record, topic=topic, recommended="r", chosen="c", relation=rel,
                             why=why, author="bob", links=links)
    except BadInput as exc:
        assert exc.message
        assert decisions.list_decisions(record) == []
        return
    assert decisions.list_decisions(record) == [d]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(since=st.none() | text | st.integers(0, 10**30).map(lambda n: f"{n}d")
       | st.sampled_from(["9" * 400 + "s", "1e400", "0001-01-01", "9999-12-31T23:59:59Z"]),
       topic=st.none() | text, rel=st.none() | relation)
def test_reading_the_log_with_odd_filters_never_gives_a_traceback(
    tmp_path_factory: object, since: str | None, topic: str | None, rel: str | None
) -> None:
    record = _fresh(tmp_path_factory.mktemp("read"))  # type: ignore[attr-defined]
    argv = ["--record", str(record.root), "decisions", "--json"]
    for flag, value in (("--since", since), ("--topic", topic), ("--relation", rel)):
        if value is not None:
            argv += [flag, value]
    code, err = _run(argv)
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("atlas: error: ") and len(err.splitlines()) <= 2
