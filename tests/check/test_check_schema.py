"""The schema verdict is jsonschema-rs's, the messages python-jsonschema's: the two never
disagree, on the record's own kinds and on what a hand edit or a hostile file can hold."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atlas_files.check import validators
from atlas_files.check.schema import validate
from atlas_files.linkcheck.findings import Report

KINDS = ["version", "config", "receipt", "lease", "decision", "correction", "telemetry",
         "session", "task"]

VALID: dict[str, Any] = {
    "version": {"name": "plan", "version": 2, "based_on": 1, "author": "ann",
                "written_at": "2026-01-31T12:00:00.123456Z", "summary": "s",
                "digest": "sha256:" + "a" * 64, "links": ["plan@v1"], "proposal": False},
    "config": {"schema_version": 1, "projects": ["web", "ml"], "default_project": "web",
               "lease_cap": "4h", "status_limit": 4000, "clock_tolerance": "2m",
               "machines": {"box": {"probe": "local", "timeout": "10s", "interval": "5m"}}},
    "receipt": {"identity": "ann", "updated_at": "2026-01-31T12:00:00Z",
                "read": {"web/status": 3}},
    "lease": {"kind": "lease", "resource": "box.gpu0", "generation": 2, "action": "renew",
              "holder": "ann", "why": "train", "claimed_at": "2026-01-31T12:00:00Z",
              "expires_at": "2026-01-31T13:00:00Z", "duration_s": 3600.0,
              "written_at": "2026-01-31T12:00:00Z", "written_by": "ann", "previous": None},
    "decision": {"id": "dec-20260131t120000000000z-0a0b0c0d", "kind": "decision",
                 "at": "2026-01-31T12:00:00Z", "author": "ann", "project": "web",
                 "topic": "t", "recommended": "a", "chosen": "b", "relation": "disagreed",
                 "why": "timing", "links": ["plan@v1"], "accepts": "plan@v2"},
    "correction": {"id": "cor-20260131t120000000000z-0a0b0c0d", "kind": "retraction",
                   "at": "2026-01-31T12:00:00Z", "author": "ann", "project": "web",
                   "ref": "plan@v1", "why": "wrong"},
    "telemetry": {"machine": "box", "observed_at": "2026-01-31T12:00:00Z",
                  "observer": "p", "reachable": True, "error": None,
                  "nvml": {"available": True, "reason": None, "driver_version": "550"},
                  "gpus": [{"index": 0, "uuid": "GPU-1", "name": "H200",
                            "memory_used_mib": 10, "memory_total_mib": 100,
                            "utilization_gpu_pct": 5, "power_w": 70.5,
                            "processes": [{"pid": 1, "memory_used_mib": 3,
                                           "kinds": ["compute"]}]}]},
    "task": {"id": "01m94rv89fcea92c.done.01m94rvdrpy5w5pr", "kind": "task-done",
             "at": "2026-01-31T12:00:00Z", "author": "ann", "project": "web",
             "task": "01m94rv89fcea92c", "why": "ran it", "link": "plan@v2"},
    "session": {"identity": "ann", "project": "web", "state": "ended",
                "started_at": "2026-01-31T12:00:00Z", "ended_at": "2026-01-31T13:00:00Z",
                "previous": None, "saw": {"status": 3, "topics": {"plan": 2},
                                          "leases": {"box.gpu0": 7}}},
}


def jsonschema_valid(kind: str, instance: Any) -> bool:
    return not list(validators.messages(kind).iter_errors(instance))


def fast_valid(kind: str, instance: Any) -> bool:
    return validators.fast_verdict(kind, instance)


@pytest.mark.parametrize("kind", KINDS)
def test_typical_valid_files_take_the_fast_path(kind: str) -> None:
    assert jsonschema_valid(kind, VALID[kind])
    assert fast_valid(kind, VALID[kind]) is True


NAMES = ["plan", "plan\n", "plan\n\n", "\nplan", "pl\nan", "plan\r", "plan ", "Plan", "p" * 100,
         "p" * 101, "plan\u2028", "plan\x85"]


@pytest.mark.parametrize("kind,field", [("version", "name"), ("decision", "author"),
                                        ("lease", "resource"), ("receipt", "identity")])
@pytest.mark.parametrize("name", NAMES)
def test_names_with_a_trailing_newline_are_refused_by_both(kind: str, field: str,
                                                           name: str) -> None:
    instance = dict(VALID[kind], **{field: name})
    verdict = jsonschema_valid(kind, instance)
    assert fast_valid(kind, instance) is verdict
    if "\n" in name:
        assert verdict is False


TEXTS = [" ", "\x1c", "\x1f", "\x85", "\ufeff", "\u00a0", "\u180e", "\u2028", "\u3000", "a",
         " \x1c ", "\t\n", "x\ny", "\u200b"]


@pytest.mark.parametrize("text", TEXTS)
def test_both_agree_on_what_whitespace_is(text: str) -> None:
    # The schemas' "\\S" (not blank) means Python's whitespace to both validators.
    for field in ("why", "chosen", "topic"):
        instance = dict(VALID["decision"], **{field: text})
        assert fast_valid("decision", instance) is jsonschema_valid("decision", instance), field


TIMES = ["2026-01-31T12:00:00Z", "2026-01-31t12:00:00z", "2026-01-31 12:00:00Z",
         "2026-01-31T12:00:00Z\n", "2026-12-31T23:59:60Z", "2026-06-30T22:59:60-01:00",
         "2026-06-30T12:59:60Z", "2026-01-31T12:00:00.1234567891Z", "0000-02-29T12:00:00Z",
         "2026-02-29T12:00:00Z", "2024-02-29T12:00:00Z", "2026-01-31T12:00:00+24:00",
         "2026-01-31T12:00:00+23:59", "2026-01-31T12:00:00", "2026-01-31T24:00:00Z",
         "2026-01-31T12:60:00Z", "2026-01-31T12:00:00.Z", "2026-13-01T12:00:00Z",
         "2026-04-31T12:00:00Z", "2026-01-00T12:00:00Z", "\uff12026-01-31T12:00:00Z",
         "2026-01-31T12:00:00+01:60", "yesterday", ""]


@pytest.mark.parametrize("value", TIMES)
def test_both_agree_on_date_times(value: str) -> None:
    instance = dict(VALID["version"], written_at=value)
    assert fast_valid("version", instance) is jsonschema_valid("version", instance)


def test_a_date_that_does_not_exist_is_a_finding(tmp_path: Any) -> None:
    # python-jsonschema alone checks date-time only with an optional package: the check
    # does not depend on it.
    report = Report()
    instance = dict(VALID["version"], written_at="2026-02-30T12:00:00Z")
    assert validate(report, tmp_path / "v.md", "version", instance, dict) is False
    assert [f.code for f in report.findings] == ["ATL001"]
    assert "written_at" in report.findings[0].message


def test_what_is_not_json_is_judged_by_jsonschema(tmp_path: Any) -> None:
    # NaN, a lone surrogate, a key that is not a string: jsonschema-rs refuses or cannot
    # take them; jsonschema has the final word.
    for value in (float("nan"), float("inf"), "\ud800"):
        instance = dict(VALID["telemetry"], host=value) if isinstance(value, str) else \
            dict(VALID["telemetry"], duration_s=value)
        report = Report()
        assert validate(report, tmp_path / "t.json", "telemetry", instance, dict) \
            is jsonschema_valid("telemetry", instance)


leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 5), st.integers(), st.floats(allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(["", "ann", "Ann", "plan@v1", "2026-01-31T12:00:00Z", "2026-02-31T12:00:00Z",
                     "2026-01-31 12:00", "sha256:" + "a" * 64, "claim", "release", "lease",
                     "decision", "retraction", "correction", "agreed", "4h", "local", " ",
                     "dec-20260131t120000000000z-0a0b0c0d", "x\ny", "ann\n", "\x1c", "\ufeff",
                     "2026-12-31T23:59:60Z", "1h30m\n", "web/status"]),
)
values = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["index", "pid", "memory_used_mib", "available", "reason", "probe", "x", "web/status",
         "box"]), inner, max_size=3)), max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> Any:
    """A valid instance with some fields replaced, removed or added."""
    base = dict(VALID[kind])
    for key in draw(st.lists(st.sampled_from(sorted(base) + ["extra"]), max_size=4)):
        action = draw(st.integers(0, 2))
        if action == 0:
            base.pop(key, None)
        else:
            base[key] = draw(values)
    return base


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_verdict_never_disagrees_with_jsonschema(kind: str, data: Any) -> None:
    instance = data.draw(st.one_of(mutated(kind), values))
    assert fast_valid(kind, instance) is jsonschema_valid(kind, instance), instance
