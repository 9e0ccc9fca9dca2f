"""The record's file-name rules and the one classifier of record files (facts/layout.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atlas_files.facts import layout
from atlas_files.facts.names import is_name, split_version_ref

NAMES = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True)
IDENTITIES = NAMES
VERSIONS = st.integers(min_value=1, max_value=10**12)
GENERATIONS = st.integers(min_value=1, max_value=10**12)
# [0-9], not \d: \d draws any Unicode digit, and filtering those out made hypothesis
# throw away most of what it drew.
ENTRY_IDS = st.from_regex(r"(dec|cor)-[0-9]{8}t[0-9]{12}z-[0-9a-f]{8}", fullmatch=True)


@given(NAMES, VERSIONS)
def test_a_version_file_name_reads_back_as_its_stream_and_number(name: str, n: int) -> None:
    filename = layout.version_filename(name, n)
    assert layout.version_parts(filename) == (name, filename[len(name) + 2:-3])
    assert layout.is_canonical_number(filename[len(name) + 2:-3])
    found = layout.record_file(f"projects/main/artifacts/{name}/{filename}")
    assert found == layout.RecordFile(layout.VERSION, layout.ARTIFACTS, "main", name, n)


@given(VERSIONS)
def test_a_status_version_is_a_version_of_the_status(n: int) -> None:
    rel = f"projects/web/status/{layout.version_filename('status', n)}"
    assert layout.record_file(rel) == layout.RecordFile(layout.VERSION, layout.STATUS, "web",
                                                        "status", n)


@given(GENERATIONS)
def test_a_generation_file_name_reads_back_as_its_number(n: int) -> None:
    filename = layout.generation_filename(n)
    assert layout.generation_number(filename) == n
    assert layout.record_file(f"leases/box.gpu0/{filename}") == layout.RecordFile(
        layout.GENERATION, layout.LEASES, "", "box.gpu0", n)


@given(ENTRY_IDS)
def test_an_entry_file_name_reads_back_as_its_id(entry_id: str) -> None:
    filename = layout.entry_filename(entry_id)
    assert layout.is_entry_file(filename)
    folder = layout.DECISIONS if entry_id.startswith("dec") else layout.CORRECTIONS
    assert layout.record_file(f"projects/main/{folder}/{filename}") == layout.RecordFile(
        layout.ENTRY, folder, "main", entry_id)


@given(NAMES, VERSIONS, IDENTITIES)
def test_a_draft_keeps_its_version_and_names_its_writer(name: str, n: int, who: str) -> None:
    draft = layout.draft_filename(layout.version_filename(name, n), who)
    assert draft.endswith(f".{who}.md")
    assert layout.draft_version(name, draft) == n
    assert layout.record_file(f"{layout.DRAFTS}/main/{name}/{draft}") is None


@given(NAMES, st.integers(min_value=1, max_value=10**12 - 1))
def test_a_reference_splits_into_its_name_and_number(name: str, n: int) -> None:
    assert split_version_ref(f"{name}@v{n}") == (name, n)


@pytest.mark.parametrize("text", ["plan", "plan@v", "plan@vx", "@v3", "a@b@v3", "plan@v3\n",
                                  "plan@v١", "plan@v" + "9" * 13])
def test_what_is_no_reference_splits_into_nothing(text: str) -> None:
    assert split_version_ref(text) is None


@pytest.mark.parametrize(("rel", "kind"), [
    ("projects/main/status/status.v0001.md", layout.VERSION),
    ("projects/main/artifacts/plan/plan.v0002.md", layout.VERSION),
    ("projects/main/decisions/dec-20261129t110512123456z-1a2b3c4d.md", layout.ENTRY),
    ("projects/main/corrections/cor-20261129t110512123456z-1a2b3c4d.md", layout.ENTRY),
    ("projects/main/tasks/01jd3x5k7m9p2qrs.md", layout.ENTRY),
    ("leases/gpu0/g00000003.json", layout.GENERATION),
    ("receipts/alice.json", layout.ROW),
    ("sessions/alice.json", layout.ROW),
    ("telemetry/box.json", layout.ROW),
])
def test_each_kind_of_record_file_is_known_by_where_it_lies(rel: str, kind: str) -> None:
    found = layout.record_file(rel)
    assert found is not None and found.kind == kind
    assert found.immutable == (kind != layout.ROW)


@pytest.mark.parametrize("rel", [
    "atlas.yaml", "README.md", "notes/plan.v0001.md",
    "projects/main/status/plan.v0001.md",  # a version of another stream than the folder's
    "projects/main/artifacts/plan/other.v0001.md",
    "projects/main/artifacts/plan.v0001.md",  # not in a topic's folder
    "projects/Main/status/status.v0001.md",  # no project is named so
    "projects/main/decisions/dec-20261129t110512123456z-1a2b3c4d.md.bak",
    "leases/gpu0/gx.json", "leases/gpu0/g00000003.json.tmp", "leases/g00000003.json",
    "receipts/alice.yaml", "receipts/x/alice.json",
    ".atlas-drafts/main/plan/plan.v0004.alice.md",
])
def test_what_is_no_record_file_is_none(rel: str) -> None:
    assert layout.record_file(rel) is None


@pytest.mark.parametrize(("rel", "kind"), [
    ("projects/main/artifacts/plan/plan.v7.md", layout.VERSION),
    ("projects/main/artifacts/plan/plan.v00007.md", layout.VERSION),
    ("projects/main/decisions/notes.md", layout.ENTRY),
    ("projects/main/tasks/todo.md", layout.ENTRY),
    ("leases/gpu0/g3.json", layout.GENERATION),
])
def test_a_file_named_by_hand_where_one_would_lie_is_of_its_kind_but_not_canonical(
        rel: str, kind: str) -> None:
    found = layout.record_file(rel)
    assert found is not None and found.kind == kind and not found.canonical


def test_a_version_number_of_thousands_of_digits_is_read_without_a_crash() -> None:
    huge = layout.record_file("projects/main/artifacts/plan/plan.v" + "1" * 5000 + ".md")
    assert huge is not None and not huge.canonical  # read without int() refusing it


@given(st.text(alphabet="abZ09._-@ ", min_size=1, max_size=12))
def test_every_name_the_classifier_takes_for_a_topic_is_a_name(name: str) -> None:
    found = layout.record_file(f"projects/main/artifacts/{name}/{name}.v0001.md")
    assert (found is not None) == is_name(name)
