"""Records for the site tests, and readers of the built site (no tests here).

``rich_record`` writes every kind of thing a reader looks for; ``hostile_record`` puts
XSS payloads everywhere an agent can put text.
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from atlas_files.facts import timeutil
from atlas_files.protocol import artifacts, corrections, decisions, leases, status
from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.protocol.telemetry.rows import write_row
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

GPU: dict[str, object] = {"uuid": None, "utilization_gpu_pct": 40, "processes": []}


@dataclass
class Facts:
    """What was written, so tests can look for it in the site."""

    topics: dict[str, dict[str, int]] = field(default_factory=dict)  # project -> topic -> n
    status: dict[str, int] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)  # id -> ref
    leases: list[str] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)


def _row(record: Record, machine: str, **fields: object) -> None:
    row: dict[str, object] = {"machine": machine, "observer": "prober-1", "error": None, "gpus": [],
           "observed_at": timeutil.format_time(timeutil.now()),
           "nvml": {"available": True, "reason": None, "driver_version": "1"}}
    row.update(fields)
    write_row(record, row)


def rich_record(root: Path) -> tuple[Record, Facts]:
    record = Record.init(root, ["web", "ml"])
    facts = Facts(topics={"web": {}, "ml": {}})
    for i, who in enumerate(["alice", "bob", "alice"], start=1):
        status.write(record, f"Web status {i}: loader {'done' if i == 3 else 'in progress'}.\n",
                            author=who, project="web", expect=i - 1)
    status.write(record, "ML status: run 7 queued.\n", author="dana", project="ml")
    facts.status = {"web": 3, "ml": 1}
    for v in range(1, 4):
        artifacts.put(
            record, "plan", f"# Plan\n\nStep list, revision {v}.\n\n- load\n- evaluate {v}\n",
            author="alice" if v != 2 else "bob", project="web", expect=v - 1,
            summary=f"plan revision {v}")
    artifacts.put(record, "design", "# Design\n\nUse plain files.\n", author="carol", project="web",
               proposal=True)
    artifacts.put(record, "idea", "An idea nobody accepted.\n", author="bob", project="web",
               proposal=True)
    artifacts.put(record, "notes", "See [the plan](plan@v2), [the file](../plan/plan.v0001.md), "
               "[status](status@v1), [missing](plan@v9) and "
               "[the web](https://example.com).\n", author="bob", project="web")
    artifacts.put(record, "run7", "Run 7 config.\n", author="dana", project="ml")
    # "kestrel" is written nowhere else: the browser tests search for it.
    artifacts.put(record, "run7", "Run 7 config, seed 2, on the kestrel cluster.\n", author="dana",
                  project="ml", expect=1)
    facts.topics = {"web": {"plan": 3, "design": 1, "idea": 1, "notes": 1},
                    "ml": {"run7": 2}}
    d1 = decisions.decide(record, topic="storage", recommended="sqlite", chosen="plain files",
                          relation="disagreed", why="git-friendly", author="carol",
                          project="web", accepts="design@v1", links=["plan@v2"])
    d2 = decisions.decide(record, topic="loader order", recommended="loader first",
                          chosen="loader first", relation="agreed", why="it blocks the rest",
                          author="alice", project="web")
    d3 = decisions.decide(record, topic="seeds", recommended="three seeds", chosen="one seed",
                          relation="timed-out", why="the deadline came", author="dana",
                          project="ml")
    facts.decisions = [d1.id, d2.id, d3.id]
    c1 = corrections.correct(record, "plan@v1", what="step two was missing", author="alice",
                             project="web")
    c2 = corrections.correct(record, "status@v2", what="the loader was not in progress",
                             author="bob", project="web")
    c3 = corrections.correct(record, d2.id, what="the why was incomplete", author="alice",
                             project="web")
    c4 = corrections.retract(record, "run7@v1", why="the config was wrong", author="dana",
                             project="ml")
    facts.corrections = {c1.id: "plan@v1", c2.id: "status@v2", c3.id: d2.id, c4.id: "run7@v1"}
    leases.claim(record, "gpubox.gpu0", holder="alice", duration_s=3600, why="training run 7")
    leases.claim(record, "dataset-a", holder="bob", duration_s=600, why="re-indexing")
    leases.release(record, "dataset-a", holder="bob")
    leases.claim(record, "oldbox", holder="carol", duration_s=1, why="a short job")
    facts.leases = ["gpubox.gpu0", "dataset-a", "oldbox"]

    for machine in ("gpubox", "oldbox", "downbox"):
        record = probemod.add_machine(record, machine, "local", interval="5m")
    _row(record, "gpubox", reachable=True, host="gpubox", gpus=[
        {**GPU, "index": 0, "name": "H100", "memory_used_mib": 40960, "memory_total_mib": 81920},
        {**GPU, "index": 1, "name": "H100", "memory_used_mib": 512, "memory_total_mib": 81920},
    ])
    old = timeutil.format_time(timeutil.now() - timedelta(hours=2))
    _row(record, "oldbox", reachable=True, observed_at=old, gpus=[])
    _row(record, "downbox", reachable=False, error="ssh: connection timed out", gpus=[],
         nvml=None)
    facts.machines = ["gpubox", "oldbox", "downbox"]
    time.sleep(1.1)  # oldbox's one-second lease has expired by the build
    return record, facts


# Each payload sets window.__pwned (or opens a dialog) if it ever runs.
PAYLOADS = [
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "<details open ontoggle=\"window.__pwned='details'\">x</details>",
    "<input autofocus onfocus=\"window.__pwned='focus'\">",
    "<a href=\"javascript:window.__pwned='href'\">click</a>",
    "[md link](javascript:window.__pwned='md')",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "<body onload=\"window.__pwned='body'\">",
    "<style>@import 'javascript:alert(1)';</style>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:window.__pwned='meta'\">",
    "<object data=\"javascript:window.__pwned='object'\"></object>",
    "\"><script>window.__pwned='attr'</script>",
    "'><img src=x onerror=alert('quote')>",
    "</div></div><script>window.__pwned='close'</script>",
    "# Heading {: onclick=\"window.__pwned='attrlist'\" }",
    "Text {: onmouseover=\"window.__pwned='attrlist2'\" }",
    "<div markdown=\"1\" onclick=\"window.__pwned='mdinhtml'\">*x*</div>",
    "<a href=\"&#106;avascript:window.__pwned='entity'\">entity</a>",
    "<!-- --><script>window.__pwned='comment'</script>",
    "`code` <img src=1 onerror=alert(2)> ``x``",
]
PAYLOAD = "\n\n".join(PAYLOADS)
ONE_LINE = " ".join(p.replace("\n", " ") for p in PAYLOADS)


def _hand_written(record: Record, project: str, name: str, body: str, **meta: object) -> None:
    """A version written by hand (an agent with file access only), author and all."""
    stream = record.artifact_stream(name, project) if name != "status" else \
        record.status_stream(project)
    version = stream.latest() + 1
    fields = {"name": name, "version": version, "based_on": version - 1,
              "author": "alice", "written_at": timeutil.format_time(timeutil.now()),
              "summary": ONE_LINE[:200]}
    fields.update(meta)
    stream.folder.mkdir(parents=True, exist_ok=True)
    raw = body.encode()
    fields["digest"] = frontmatter.digest_of(raw)
    stream.path(version).write_bytes(frontmatter.render(fields, raw))


def hostile_record(root: Path) -> Record:
    record = Record.init(root, ["web"])
    status.write(record, PAYLOAD, author="mallory", project="web")
    artifacts.put(record, "evil", PAYLOAD, author="mallory", project="web", summary=ONE_LINE[:200])
    artifacts.put(record, "evil", PAYLOAD + "\n\nv2", author="mallory", project="web", expect=1,
               summary=ONE_LINE[:200], proposal=True)
    _hand_written(record, "web", "evil", PAYLOAD + "\n\nv3",
                  author="<img src=x onerror=\"window.__pwned='author'\">")
    _hand_written(record, "web", "status", PAYLOAD, author="</strong><script>x</script>")
    d = decisions.decide(record, topic=ONE_LINE[:200], recommended=PAYLOAD[:2000],
                         chosen=PAYLOAD[:2000], relation="agreed", why=PAYLOAD, author="mallory",
                         project="web", recommended_by="mallory")
    corrections.correct(record, d.id, what=PAYLOAD, author="mallory", project="web")
    corrections.retract(record, "evil@v1", why=PAYLOAD, author="mallory", project="web")
    leases.claim(record, "gpubox.gpu0", holder="mallory", duration_s=3600, why=ONE_LINE[:500])

    record = probemod.add_machine(record, "gpubox", "local")
    _row(record, "gpubox", reachable=True, host=ONE_LINE[:300], gpus=[
        {**GPU, "index": 0, "name": ONE_LINE[:200], "memory_used_mib": 1,
         "memory_total_mib": 2}])
    return record


# -- reading the built site --------------------------------------------------------------


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.attrs: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            self.attrs.append((tag, name, value))
            if name in ("id", "name"):
                self.ids.add(value)
            if name in ("href", "src"):
                self.links.append((tag, name, value))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)
        else:
            self.text.append(data)


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def page_text(path: Path) -> str:
    return " ".join(" ".join(parse(path).text).split())


def broken_links(site: Path) -> list[str]:
    """Every relative href/src of every page that points at no file, or at an anchor the
    target page lacks. External links are not followed (the tests run offline)."""
    pages = {p: parse(p) for p in site.rglob("*.html")}
    problems = []
    for path, page in pages.items():
        for tag, attr, value in page.links:
            parts = urlsplit(value)
            if parts.scheme in ("http", "https", "mailto", "data"):
                continue
            if parts.scheme:
                problems.append(f"{path.relative_to(site)}: <{tag} {attr}={value!r}>")
                continue
            target = path if not parts.path else (path.parent / unquote(parts.path))
            if parts.path.endswith("/") or target.is_dir():
                target = target / "index.html"
            target = Path(os.path.normpath(target))
            if not target.exists():
                problems.append(f"{path.relative_to(site)}: {value} (no such file)")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{path.relative_to(site)}: {value} (no such anchor)")
    return problems


def json_of(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def unescaped(value: str) -> str:
    return html.unescape(value)
