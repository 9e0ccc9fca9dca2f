"""Where each thing of the record lives in the site, and relative links between pages.

Every link the generator writes is relative (the site works from a file:// folder, from
any web path, and under ``mkdocs build --strict``), and points only at a page and anchor
that exist: a reference to a version or entry that is not in the record is shown as text.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from atlas_files.facts import layout
from atlas_files.facts.names import is_entry_id, is_name, split_version_ref

HOME = "index.md"
ARTIFACTS = "artifacts/index.md"
DECISIONS = "decisions.md"
LEASES = "leases.md"
TELEMETRY = "telemetry.md"
TAGS = "tags.md"



def status_page(project: str) -> str:
    return f"status/{project}.md"


def tasks_page(project: str) -> str:
    return f"tasks/{project}.md"


def topic_page(project: str, topic: str) -> str:
    return f"artifacts/{project}/{topic}.md"


def topic_list_page(project: str, n: int) -> str:
    # A topic name starts with a letter or digit, so no topic's page can take this name.
    return f"artifacts/{project}/_topics-{n}.md"


def mark_list_page(mark: str, n: int) -> str:
    return f"marks/{mark}-{n}.md"


def mark_anchor(mark: str) -> str:
    return f"mark--{mark}"


def version_anchor(version: int) -> str:
    # The toc extension's id for a "## v3" heading; the generator writes those headings.
    return f"v{version}"


def project_anchor(project: str) -> str:
    # toc slugs never hold "--", so this id cannot collide with a heading's id.
    return f"project--{project}"


def href(from_page: str, to_page: str, anchor: str | None = None) -> str:
    """The relative URL from one docs page to another (``use_directory_urls: false``)."""
    target = (to_page[:-3] + ".html" if to_page.endswith(".md") else to_page).split("/")
    source = from_page.split("/")[:-1]
    # Pages are plain relative paths without "." or "..": drop the common folders and
    # climb out of the rest (posixpath.relpath would ask the OS for the cwd every time).
    common = 0
    while common < min(len(source), len(target) - 1) and source[common] == target[common]:
        common += 1
    rel = "/".join([".."] * (len(source) - common) + target[common:])
    return f"{rel}#{anchor}" if anchor else rel


@dataclass
class Known:
    """What exists in the record, so that links are only made to what the site shows."""

    topics: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    status: dict[str, set[int]] = field(default_factory=dict)
    entries: dict[str, str] = field(default_factory=dict)  # entry id -> project

    def target(self, project: str, ref: str) -> tuple[str, str | None] | None:
        """(page, anchor) of a reference (``name@vN``, ``status@vN``, entry id, ``name``)."""
        ref = ref.strip()
        if is_entry_id(ref):
            return (DECISIONS, ref) if ref in self.entries else None
        split = split_version_ref(ref)
        if split is not None and is_name(split[0]):
            name, version = split
            if name == "status":
                ok = version in self.status.get(project, set())
                return (status_page(project), version_anchor(version)) if ok else None
            if version in self.topics.get(project, {}).get(name, set()):
                return topic_page(project, name), version_anchor(version)
            return None
        if ref in self.topics.get(project, {}):
            return topic_page(project, ref), None
        return None

    def path_target(self, record_path: str) -> tuple[str, str | None] | None:
        """(page, anchor) of a record-relative file path such as
        ``projects/web/artifacts/plan/plan.v0002.md``."""
        parts = [p for p in record_path.split("/") if p]
        found = layout.record_file("/".join(parts))
        if found is not None and found.kind == layout.VERSION:
            return self.target(found.project, f"{found.name}@v{found.number}")
        if found is not None and found.folder in (layout.DECISIONS, layout.CORRECTIONS) \
                and found.canonical:
            return self.target(found.project, found.name)
        if len(parts) == 4 and parts[0] == layout.PROJECTS and parts[2] == layout.ARTIFACTS:
            return self.target(parts[1], parts[3])  # a topic's folder: its page
        return None


def body_resolver(
    known: Known, project: str, page: str, source_dir: str
) -> Callable[[str], str | None]:
    """A function for BodyRenderer: a link target in a body -> URL of this site or None.

    ``source_dir`` is the record-relative folder of the version the body belongs to, so a
    relative path written in the body resolves as it would in the record.
    """

    def resolve(target: str) -> str | None:
        if not target or target.startswith(("#", "/", "?")) or "\\" in target:
            return None  # anchors of a body's own headings do not exist in the site
        path = target.split("#", 1)[0].split("?", 1)[0]
        found = known.target(project, path)
        if found is None:
            joined = posixpath.normpath(posixpath.join(source_dir, path))
            if joined.startswith(".."):
                return None
            found = known.path_target(joined)
        if found is None:
            return None
        return href(page, found[0], found[1])

    return resolve
