"""The fast schema path may be unsure, never wrong: whatever it accepts, jsonschema accepts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atlas_files import schemas
from atlas_files.check.fastschema import checker

KINDS = ["version", "config", "receipt", "lease", "decision", "correction", "telemetry",
         "session"]

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
    "session": {"identity": "ann", "project": "web", "state": "ended",
                "started_at": "2026-01-31T12:00:00Z", "ended_at": "2026-01-31T13:00:00Z",
                "previous": None, "saw": {"status": 3, "topics": {"plan": 2},
                                          "leases": {"box.gpu0": 7}}},
}


def jsonschema_valid(kind: str, instance: Any) -> bool:
    return not list(schemas.validator(kind).iter_errors(instance))


@pytest.mark.parametrize("kind", KINDS)
def test_typical_valid_files_take_the_fast_path(kind: str) -> None:
    assert jsonschema_valid(kind, VALID[kind])
    assert checker(kind)(VALID[kind]) is True


leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 5), st.floats(allow_nan=True),
    st.sampled_from(["", "ann", "Ann", "plan@v1", "2026-01-31T12:00:00Z", "2026-02-31T12:00:00Z",
                     "2026-01-31 12:00", "sha256:" + "a" * 64, "claim", "release", "lease",
                     "decision", "retraction", "correction", "agreed", "4h", "local", " ",
                     "dec-20260131t120000000000z-0a0b0c0d", "x\ny"]),
)
values = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["index", "pid", "memory_used_mib", "available", "reason", "probe", "x"]), inner,
        max_size=3)), max_leaves=8)


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
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_fast_path_never_accepts_what_jsonschema_refuses(kind: str, data: Any) -> None:
    instance = data.draw(st.one_of(mutated(kind), values))
    if checker(kind)(instance):
        assert jsonschema_valid(kind, instance), instance
