"""Version families outside any record: ``plan.v0001.md``, ``plan.v0002.md``, ... anywhere.

A family is the files of one folder sharing a stem and an extension around ``.vN``
(``report.v3.pdf`` belongs to ``report.v*.pdf``). Its numbers must run from 1 (or 0) with
no gap and no number twice. A skip is reported at the file after the gap, and only for
the files asked about, so a commit is judged by what it adds. Limits: a family is judged by
its names (and, for Markdown with a ``sha256:`` digest in its front matter, by that digest);
whether a committed file was edited is for the git-aware mode to say.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from atlas_files.linkcheck.filesources import Source, read_page
from atlas_files.linkcheck.findings import Report
from atlas_files.storage import frontmatter

MAX_NAME = 255
FAMILY_RE = re.compile(r"^(?P<stem>.+)\.v(?P<num>\d+)(?P<ext>(?:\.[^./\\]+)*)$")


def family_of(name: str) -> tuple[str, str, int] | None:
    """(stem, extension, number) of a versioned file name, or None. The pattern backtracks
    (cubic in the name's length), so only names a file system can hold are read: a longer
    one can only come from a crafted git tree."""
    if len(name) > MAX_NAME:
        return None
    m = FAMILY_RE.match(name)
    if not m or len(m.group("num")) > 9:
        return None
    return m.group("stem"), m.group("ext"), int(m.group("num"))


def is_versioned(path: Path | str) -> bool:
    return family_of(Path(path).name) is not None


def check_families(report: Report, source: Source, files: Iterable[Path]) -> None:
    asked: dict[tuple[Path, str, str], set[str]] = defaultdict(set)
    for path in files:
        fam = family_of(path.name)
        if fam is not None:
            asked[(path.parent, fam[0], fam[1])].add(path.name)
    for (folder, stem, ext), names in sorted(asked.items()):
        _check_family(report, source, folder, stem, ext, names)


def _check_family(report: Report, source: Source, folder: Path, stem: str, ext: str,
                  names: set[str]) -> None:
    members: dict[int, list[str]] = defaultdict(list)
    for entry in source.listdir(folder):
        fam = family_of(entry)
        if fam is not None and fam[0] == stem and fam[1] == ext:
            members[fam[2]].append(entry)
    if not members:
        return
    numbers = sorted(members)
    expected = numbers[0] if numbers[0] in (0, 1) else 1
    family = f"{stem}.v*{ext}"
    for number in numbers:
        files = sorted(members[number])
        shown = [f for f in files if f in names]
        if number > expected and shown:
            missing = f"v{expected}" if number == expected + 1 else \
                f"v{expected}..v{number - 1}"
            after = "as the first version" if number == numbers[0] else f"after v{expected - 1}"
            report.add(folder / shown[0], 1, "ATL003",
                       f"version skip in {family}: {shown[0]} is v{number} {after}; "
                       f"{missing} is missing",
                       f"name it as the next version: {_renamed(files[0], stem, ext, expected)}")
        if len(files) > 1 and shown:
            report.add(folder / shown[0], 1, "ATL004",
                       f"{len(files)} files claim v{number} of {family}: {', '.join(files)}")
        expected = number + 1
    for name in sorted(names):
        report.files += 1
        if ext.lower() in (".md", ".markdown"):
            _check_digest(report, source, folder / name)


def _renamed(example: str, stem: str, ext: str, number: int) -> str:
    digits = len(example) - len(stem) - len(ext) - 2
    return f"{stem}.v{number:0{max(digits, 1)}d}{ext}"


def _check_digest(report: Report, source: Source, path: Path) -> None:
    try:
        parsed = frontmatter.parse(read_page(source, path))
    except (OSError, ValueError, RecursionError, OverflowError):
        return  # not every versioned Markdown file carries front matter, or a readable one
    stated = parsed.meta.get("digest")
    if isinstance(stated, str) and stated.startswith("sha256:") and parsed.digest_ok is False:
        report.add(path, 1, "ATL005",
                   f"{path.name} was edited in place: its body no longer matches its digest "
                   "(versions are immutable; write the next version)")
