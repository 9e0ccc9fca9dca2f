"""What a check reports: one finding per problem, each with a stable code.

Codes never change meaning once published (scripts and hooks match on them); a new kind of
problem gets a new code. The table here is the one docs/check.md shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ERROR = "error"
WARNING = "warning"
MAX_MESSAGE = 600


@dataclass(frozen=True)
class Code:
    code: str
    severity: str
    title: str
    hint: str


_TABLE = (
    Code("ATL001", ERROR, "file does not match its kind's JSON Schema",
         "fix the field named; `schemas/` holds the schema of each kind"),
    Code("ATL002", ERROR, "file cannot be read as its kind",
         "restore the file (from git or a backup); versions and entries are never edited"),
    Code("ATL003", ERROR, "version skip: versions are not 1..N without a gap",
         "name a new version after the newest one (N+1); never skip a number"),
    Code("ATL004", ERROR, "file name disagrees with its contents, or two files claim one name",
         "a version file is NAME.vNNNN.md with the same name and version in its front matter"),
    Code("ATL005", ERROR, "edited in place: the body no longer matches its digest",
         "versions are immutable; restore this one and write the next version instead"),
    Code("ATL006", WARNING, "no digest yet (a hand-written file not stamped)",
         "run `atlas check --fix` to stamp the digest and make the file read-only"),
    Code("ATL007", ERROR, "version jump: based_on is older than the version before",
         "read the versions written since, merge them into your text, and write again"),
    Code("ATL008", WARNING, "version jump in a superseded version (history)",
         "check that a later version carries what the skipped one said"),
    Code("ATL009", ERROR, "based_on is not below the version",
         "based_on names the version you read before writing: version - 1, or 0 for the first"),
    Code("ATL010", ERROR, "broken link: the target file does not exist",
         "fix the link (paths are relative to the linking file), or restore the target"),
    Code("ATL011", ERROR, "broken anchor: the target has no such heading",
         "link to an existing heading (anchors are lowercase, words joined by '-')"),
    Code("ATL012", WARNING, "stale link: the version linked has been superseded",
         "read the newest version and link it if it is what you mean"),
    Code("ATL013", ERROR, "link to a retracted version",
         "its author withdrew it; link a version that stands, or say why you rely on it"),
    Code("ATL014", ERROR, "dangling reference: the version or entry does not exist",
         "`atlas ls`, `atlas history NAME` and `atlas decisions` show what exists"),
    Code("ATL015", WARNING, "an entry builds on a retracted version",
         "if the decision no longer stands, record a new decision or a correction of it"),
    Code("ATL016", WARNING, "broken link in a reference definition that no link uses",
         "fix or remove the definition: nothing links through it, so nobody meets it yet"),
    Code("ATL017", WARNING, "link cannot be checked from source: the build makes its target",
         "build the site to check it (`mkdocs build --strict` with validation set); a "
         "plugin, hook or directive makes that page's anchors or file"),
    Code("ATL018", WARNING, "mkdocs.yml names what atlas check cannot load or run",
         "an extension of Python-Markdown, pymdown-extensions or Material that is not "
         "installed: install it where atlas runs; what atlas never runs (other extensions, "
         "`module:Class` names, python tags, plugins, hooks) stays a build check"),
    Code("ATL019", WARNING, "link to a folder or an unrecognized path, not to a page",
         "link the page itself (the folder's index.md or README.md): a site has no page at a "
         "folder's path, and MkDocs leaves such a link as it is"),
    Code("ATL020", ERROR, "lease longer than the record's cap",
         "leases cap at lease_cap in atlas.yaml; claim again for a shorter time"),
    Code("ATL021", ERROR, "lease claimed in the future beyond the clock tolerance",
         "check the clock of the machine that wrote it; break the lease if it is wrong"),
    Code("ATL022", ERROR, "written in the future beyond the clock tolerance",
         "check the clock of the machine that wrote it (or undo the hand edit of the time); "
         "readers sort and age by it, so a correction should say when it was really written"),
    Code("ATL030", WARNING, "crash debris: a temp file older than an hour",
         "`atlas check --fix` removes it; readers already ignore it"),
    Code("ATL031", WARNING, "status longer than the record's status_limit",
         "keep the status short; move detail into an artifact and link it"),
    Code("ATL032", WARNING, "stray file in a record folder (readers ignore it)",
         "move it elsewhere, or name it as this folder's files are named"),
    Code("ATL033", WARNING, "project folder not listed in atlas.yaml",
         "add the project with `atlas init RECORD --project NAME`"),
    Code("ATL034", ERROR, "misnamed version file: readers do not see it",
         "name versions NAME.vNNNN.md: four digits at least, no extra leading zero"),
    Code("ATL035", ERROR, "a record inside the record (an atlas.yaml below its root)",
         "move the inner record out (records sit side by side, never nested); to add a "
         "project to this record, `atlas init RECORD --project NAME`"),
    Code("ATL036", ERROR, "misnamed entry file: readers do not see it",
         "name an entry <id>.md exactly as its id is written (lowercase), e.g. "
         "dec-20260131t120000000000z-1a2b3c4d.md"),
    Code("ATL037", ERROR, "a record folder is a symlink or not a folder: commands refuse it",
         "replace it with a real folder (restore it from git); the record never follows a "
         "symlink"),
    Code("ATL038", ERROR, "a folder cannot be read (no permission)",
         "let the user who runs atlas read it (`chmod u+rx`, or fix its owner); the rest of "
         "the record was still checked"),
    Code("ATL039", ERROR, "version body larger than the record's body_limit",
         "split it into smaller documents and link them; or raise body_limit in atlas.yaml"),
    Code("ATL040", ERROR, "commit edits an immutable file (a version or an entry)",
         "restore it (`git restore --staged --worktree PATH`) and write the next version or "
         "a correction"),
    Code("ATL041", ERROR, "commit deletes or renames an immutable file (a version or an entry)",
         "restore it (`git restore --staged --worktree PATH`); history is never removed"),
    Code("ATL042", ERROR, "commit moves or deletes a Markdown file that is still linked",
         "fix the links in the same commit that moves the files"),
    Code("ATL050", ERROR, "a machine's probe command in atlas.yaml is new or changed",
         "a probe string is a command someone's prober may run: review it; if it is meant, "
         "commit it (past the hook: SKIP=atlas-check), and each prober's user approves it "
         "with `atlas telemetry approve MACHINE`"),
    Code("ATL051", ERROR, "the sync: block in atlas.yaml is new, changed or removed",
         "the sync settings say where every clone's writes go: review them; if they are "
         "meant, commit them (past the hook: SKIP=atlas-check), and a person on each clone "
         "accepts them with `atlas sync accept`"),
    Code("ATL099", ERROR, "the checker failed on this file (a bug in atlas)",
         "report it with the file; the other files were still checked"),
)
CODES: dict[str, Code] = {c.code: c for c in _TABLE}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    code: str
    message: str
    hint: str = ""
    severity: str = ""

    def __post_init__(self) -> None:
        known = CODES[self.code]
        if not self.severity:
            object.__setattr__(self, "severity", known.severity)
        if not self.hint:
            object.__setattr__(self, "hint", known.hint)

    def line_text(self) -> str:
        return f"{self.path}:{self.line}: {self.code} {self.message}"

    def shown(self) -> str:
        """The finding as `atlas check` prints it: its line, then its severity and hint."""
        return f"{self.line_text()}\n    {self.severity}; hint: {self.hint}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "line": self.line, "code": self.code,
            "severity": self.severity, "message": self.message, "hint": self.hint,
        }


@dataclass
class Report:
    """Collects findings as they are made; ``on_finding`` lets a caller print them at once.

    ``base`` is the folder paths are shown relative to (the current folder, usually), so a
    line reads like a compiler's and an editor can jump to it.
    """

    base: Path | None = None
    on_finding: Callable[[Finding], None] | None = None
    findings: list[Finding] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    files: int = 0
    _seen: set[tuple[str, int, str, str]] = field(default_factory=set, repr=False)
    # Paths (as shown) with at least one finding: --fix leaves such a file alone.
    flagged: set[str] = field(default_factory=set, repr=False)

    def show(self, path: Path | str) -> str:
        text = str(path)
        if self.base is not None and isinstance(path, Path) and path.is_absolute():
            try:
                return str(path.relative_to(self.base))
            except ValueError:
                return text
        return text

    def add(self, path: Path | str, line: int, code: str, message: str, hint: str = "",
            severity: str = "") -> None:
        """Record a finding. ``severity`` overrides the code's own, where the project says
        how much a kind of problem weighs (a MkDocs site's ``validation:`` block)."""
        # A message may quote what a hostile file holds: one finding stays one short line.
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE - 3] + "..."
        shown = self.show(path)
        key = (shown, line, code, message)
        if key in self._seen:  # the same problem reached by two routes is one finding
            return
        self._seen.add(key)
        self.flagged.add(shown)
        finding = Finding(shown, max(int(line), 1), code, message, hint, severity)
        self.findings.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def has_findings(self, path: Path | str) -> bool:
        return self.show(path) in self.flagged

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == WARNING)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def summary(self) -> str:
        """The last line `atlas check` prints."""
        files = f"{self.files} file{'' if self.files == 1 else 's'}"
        if not self.findings:
            return f"atlas check: no findings in {files}"
        e, w = self.errors, self.warnings
        return (f"atlas check: {e} error{'' if e == 1 else 's'}, {w} "
                f"warning{'' if w == 1 else 's'} in {files}")

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
            "fixed": list(self.fixed),
            "files": self.files,
        }
