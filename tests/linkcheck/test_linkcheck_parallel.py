"""A MkDocs site's pages rendered in several processes (linkcheck/renderpool.py): real forks,
and the same findings, the same render cache, as one child rendering them one by one,
plainly and through a command server; a child that dies costs time, never a finding."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from support.cmdserver import through
from support.linksites import site, write
from support.runner import run_atlas

from atlas_files.check import check_links
from atlas_files.linkcheck import rendercache, renderpool
from atlas_files.server import wire

PAGES = {
    "index.md": """\
# Home { #start }

See [usage](guide/usage.md#running-it), [gone](guide/usage.md#no-such),
[the note](notes.md#fn:1), [a tab](tabs.md#second-tab-heading), [x](missing.md)
and [term](notes.md#term), [inline](notes.md#inline-id), [raw](notes.md#raw-anchor),
[back](#start), [self](#nowhere), [snip](snipped.md#from-the-snippet).
""",
    "guide/usage.md": """\
# Usage

## Running `it`

Text[^a] with `code` and a [link](../index.md#start).

[^a]: A note, [broken](../index.md#absent).

## Running `it`

## Options { #opts .wide }
""",
    "notes.md": """\
# Notes

Words[^1] and **term**{ #term } and `x = 1`{ #inline-id }.

<a name="raw-anchor"></a>

[^1]: The note.
""",
    "tabs.md": """\
# Tabs

=== "First"

    ## First tab heading

=== "Second"

    ## Second tab heading

!!! note "A note"
    ### In a note
""",
    "snipped.md": "# Snipped\n\n--8<-- \"part.md\"\n\n[up](#from-the-snippet)\n",
    "includes/part.md": "## From the snippet\n",
}


def _site(root: Path) -> Path:
    folder = site(root, pages=PAGES)
    for n in range(8):  # pages large enough to be worth a process of their own
        body = "".join(f"## Part {n} {k}\n\nSome [text](../index.md#start) `code` *em*.\n\n"
                       for k in range(60))
        write(folder, {f"big/page{n}.md": f"# Big {n}\n\n{body}"})
        write(folder, {f"links{n}.md": f"[a](big/page{n}.md#part-{n}-59) "
                                       f"[b](big/page{n}.md#part-{n}-60)\n"})
    return folder


def _findings(folder: Path) -> list[tuple[str, str, str, int, str]]:
    return [(f.code, f.severity, Path(f.path).name, f.line, f.message)
            for f in check_links([folder]).findings]


def _cache(root: Path) -> dict[str, object]:
    """The render cache the run left, less when each entry was used and where the site
    lies (which the setup's key includes)."""
    where = rendercache.folder()
    assert where is not None
    key = hashlib.sha256(str(root / "mkdocs.yml").encode()).hexdigest()[:16]
    kept = next(where.glob(f"{key}-*.json")).read_text()
    data = json.loads(kept.replace(str(root), "ROOT"))
    for entry in data["pages"].values():
        entry.pop("t")
    data.pop("setup")
    return dict(data)


def test_pages_rendered_in_several_processes_say_what_one_process_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = {}
    here: dict[str, int] = {}  # pages rendered by this process (a child's are not seen)
    forks: dict[str, int] = {}  # children forked to render
    real_render, real_fork = renderpool.render, renderpool.fork_child

    def counted(renderer: object, text: str, whole: bool = True) -> renderpool.Outcome:
        here[jobs] = here.get(jobs, 0) + 1
        return real_render(renderer, text, whole)  # type: ignore[arg-type]

    def forked(*args: object) -> int | None:
        forks[jobs] = forks.get(jobs, 0) + 1
        return real_fork(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(renderpool, "render", counted)
    monkeypatch.setattr(renderpool, "fork_child", forked)
    for jobs in ("1", "3"):
        root = tmp_path / jobs
        folder = _site(root)
        monkeypatch.setenv(renderpool.ENV, jobs)
        results[jobs] = (_findings(folder), _cache(root))
    # The children rendered every page: atlas's own process none, a page's text being
    # someone else's (issue 39: each page under a deadline only a child can be held to).
    assert not here and forks["3"] > forks["1"] >= 1
    serial, parallel = results["1"], results["3"]
    assert parallel == serial
    codes = [f[0] for f in serial[0]]
    assert codes.count("ATL011") == 3 + 8 and codes.count("ATL010") == 1
    assert not [f for f in serial[0] if f[0] == "ATL011" and "notes.md" in f[4]]


def test_a_child_that_dies_leaves_its_pages_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(renderpool.ENV, "1")
    expected = _findings(_site(tmp_path / "serial"))
    parent = os.getpid()
    real_render = renderpool.render

    def dying(renderer: object, text: str, whole: bool = True) -> renderpool.Outcome:
        if os.getpid() != parent:
            os._exit(9)
        return real_render(renderer, text, whole)  # type: ignore[arg-type]

    monkeypatch.setattr(renderpool, "render", dying)
    monkeypatch.setenv(renderpool.ENV, "4")
    assert _findings(_site(tmp_path / "dying")) == expected


def test_one_process_where_pages_are_few_or_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(renderpool.ENV, raising=False)
    big = ("x" * 10**6, True)
    assert renderpool.jobs({"a.md": big}) == 1  # one page
    assert renderpool.jobs({"a.md": ("# a\n", True), "b.md": ("# b\n", True)}) == 1  # small
    monkeypatch.setenv(renderpool.ENV, "1")
    assert renderpool.jobs({f"{n}.md": big for n in range(4)}) == 1
    monkeypatch.delattr(os, "fork")
    monkeypatch.setenv(renderpool.ENV, "4")
    assert renderpool.jobs({f"{n}.md": big for n in range(4)}) == 1


@pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")
def test_a_servers_worker_renders_in_several_processes_and_says_the_same(
        server: Path, tmp_path: Path) -> None:
    plain_root, served_root = tmp_path / "plain", tmp_path / "served"
    plain = run_atlas("check", "--links-only", "--json", str(_site(plain_root)),
                      env={renderpool.ENV: "1"}, process=True)
    served = through(server, "check", "--links-only", "--json", str(_site(served_root)),
                     env={renderpool.ENV: "3"})
    assert served.returncode == plain.returncode == 1, served.stderr
    assert served.stderr == plain.stderr == ""

    def shown(out: str, root: Path) -> object:
        return json.loads(out.replace(str(root), "ROOT"))

    assert shown(served.stdout, served_root) == shown(plain.stdout, plain_root)
    assert _cache(served_root) == _cache(plain_root)
