"""Parsed atlas.yaml kept in the user's cache folder: used only for the very same text,
only from a folder nobody else can write, and never instead of an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atlas_files import __version__
from atlas_files.facts.errors import DamagedFile
from atlas_files.storage import yamlcache
from atlas_files.storage.frontmatter import load_yaml
from atlas_files.storage.record import Record


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "atlas-files" / "yaml"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.exists() else []


def _parses(calls: list[str]) -> Any:
    def parse(text: str) -> Any:
        calls.append(text)
        return load_yaml(text)
    return parse


def test_the_same_text_is_parsed_once(cache: Path) -> None:
    calls: list[str] = []
    text = "projects: [web, ml]\nsync: {auto: true, fetch_every: 30s}\n"
    first = yamlcache.load(text, _parses(calls))
    second = yamlcache.load(text, _parses(calls))
    assert first == second == {"projects": ["web", "ml"],
                               "sync": {"auto": True, "fetch_every": "30s"}}
    assert calls == [text]
    assert len(_entries(cache)) == 1
    assert (cache.stat().st_mode & 0o777) == 0o700


def test_a_command_with_an_unchanged_config_does_not_import_pyyaml(record: Record,
                                                                   cache: Path) -> None:
    code = ("import sys; from atlas_files.storage.record import Record; "
            f"print(Record({str(record.root)!r}).config.projects, 'yaml' in sys.modules)")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[0][-1] == "True"  # the first read parses atlas.yaml
    assert runs[1][-1] == "False"  # the second is served from the cache, without PyYAML
    assert runs[0][:-1] == runs[1][:-1]


def test_an_edit_of_the_same_size_in_the_same_instant_is_seen(record: Record,
                                                               cache: Path) -> None:
    path = record.root / "atlas.yaml"
    assert Record(record.root).config.status_limit == 4000
    text = path.read_text()
    path.write_text(text.replace("status_limit: 4000", "status_limit: 5000"))
    assert Record(record.root).config.status_limit == 5000
    path.write_text(text)
    assert Record(record.root).config.status_limit == 4000


def test_a_broken_config_is_refused_every_time(record: Record, cache: Path) -> None:
    path = record.root / "atlas.yaml"
    path.write_text("projects: [web\n")
    for _ in range(2):
        with pytest.raises(DamagedFile, match="not valid YAML"):
            Record(record.root).config  # noqa: B018
    path.write_text("projects: [web]\nstatus_limit: -1\n")
    for _ in range(2):
        with pytest.raises(DamagedFile, match="status_limit"):
            Record(record.root).config  # noqa: B018
    assert len(_entries(cache)) == 1  # the parse was kept; the value is still judged


def test_an_entry_in_a_folder_others_can_write_is_never_read(cache: Path) -> None:
    text = "projects: [web]\n"
    yamlcache.load(text, load_yaml)
    [entry] = _entries(cache)
    planted = json.loads(entry.read_text())
    planted["data"] = {"projects": ["evil"]}
    entry.write_text(json.dumps(planted))
    os.chmod(cache, 0o777)
    assert yamlcache.load(text, load_yaml) == {"projects": ["web"]}
    os.chmod(cache, 0o700)  # the user's own: what is kept there is what atlas reads
    assert yamlcache.load(text, load_yaml) == {"projects": ["evil"]}


def test_an_entry_for_another_text_or_a_torn_one_is_a_miss(cache: Path) -> None:
    calls: list[str] = []
    text = "projects: [web]\n"
    yamlcache.load(text, _parses(calls))
    [entry] = _entries(cache)
    entry.write_text(json.dumps({"atlas": __version__, "text": "other",
                                 "data": {"projects": ["evil"]}}))
    assert yamlcache.load(text, _parses(calls)) == {"projects": ["web"]}
    entry.write_text(entry.read_text()[:20])
    assert yamlcache.load(text, _parses(calls)) == {"projects": ["web"]}
    assert yamlcache.load(text, _parses(calls)) == {"projects": ["web"]}
    assert len(calls) == 3  # the last read found the entry the miss before it rewrote


def test_values_json_cannot_carry_are_parsed_every_time(cache: Path) -> None:
    for text in ("since: 2026-01-01\n", "1: one\n", "x: .nan\n", "s: !!set {a: null}\n"):
        calls: list[str] = []
        first = yamlcache.load(text, _parses(calls))
        yamlcache.load(text, _parses(calls))
        assert len(calls) == 2, text
        assert first is not None
    assert _entries(cache) == []


def test_no_home_folder_means_no_cache(monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "")
    calls: list[str] = []
    assert yamlcache.load("a: 1\n", _parses(calls)) == {"a": 1}
    assert yamlcache.folder() is None
    assert yamlcache.folder({"XDG_CACHE_HOME": "relative", "HOME": str(tmp_path)}) == \
        os.path.join(tmp_path, ".cache", "atlas-files", "yaml")
    # A home that is not there is none: it is never made to hold the cache.
    assert yamlcache.folder({"HOME": str(tmp_path / "nonexistent")}) is None


def test_old_entries_are_pruned(cache: Path) -> None:
    for i in range(yamlcache.MAX_ENTRIES + 1):
        yamlcache.load(f"n: {i}\n", load_yaml)
    assert len(_entries(cache)) == yamlcache.MAX_ENTRIES // 2
    assert yamlcache.load(f"n: {yamlcache.MAX_ENTRIES}\n", load_yaml) == \
        {"n": yamlcache.MAX_ENTRIES}


_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=20) | \
    st.floats(allow_nan=False)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.text(max_size=8), _VALUES, max_size=5))
def test_a_cached_parse_is_the_parse(cache: Path, data: dict[str, Any]) -> None:
    text = yaml.safe_dump(data, allow_unicode=True)
    expected = load_yaml(text)
    assert yamlcache.load(text, load_yaml) == expected
    assert yamlcache.load(text, load_yaml) == expected
