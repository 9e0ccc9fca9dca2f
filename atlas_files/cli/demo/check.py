"""Demo scene: an agent edits the record by hand, and `atlas check` catches what it got wrong."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from atlas_files.check import check_record
from atlas_files.facts import timeutil
from atlas_files.protocol import artifacts
from atlas_files.storage import frontmatter
from atlas_files.storage.record import Record

TOPIC = "runbook"


def _cli(record: Record, say: Callable[[str], None], *args: str) -> int:
    """Run `atlas check` as an agent would, and show what it prints and its exit code."""
    cmd = [sys.executable, "-m", "atlas_files", "--record", str(record.root), "check", *args]
    proc = subprocess.run(cmd, cwd=record.root, capture_output=True, text=True)
    say(f"$ atlas check {' '.join(args)}".rstrip())
    for line in (proc.stdout + proc.stderr).splitlines():
        say(f"  {line}")
    say(f"  (exit code {proc.returncode})")
    return proc.returncode


def _hand_written(version: int, based_on: int, body: str) -> bytes:
    meta = {"name": TOPIC, "version": version, "based_on": based_on, "author": "file-agent",
            "written_at": timeutil.format_time(timeutil.now()),
            "summary": "restart steps, by hand"}
    return frontmatter.render(meta, body.encode())


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== check: what a hand edit gets wrong ==")
    before = check_record(record.root)
    say(f"the record as the earlier scenes left it: {before.files} files, "
        f"{before.errors} errors, {before.warnings} warnings")
    project = record.project()
    artifacts.put(record, TOPIC, "# Runbook\n\n## Restart\n\nStop the job, then start it.\n",
               author="ops-agent", summary="restart steps")
    folder = record.artifact_stream(TOPIC).folder
    say(f"ops-agent wrote {TOPIC} v1 with `atlas put`; file-agent, which only has file "
        "access, now adds a version by hand and numbers it v3")
    body = "# Runbook\n\n## Restart\n\nDrain the queue, stop the job, then start it.\n"
    wrong = folder / f"{TOPIC}.v0003.md"
    wrong.write_bytes(_hand_written(3, 1, body))
    _cli(record, say, str(wrong.relative_to(record.root)))
    say("file-agent renames it to the next number, v2, as the hint says, and leaves out the "
        "digest (the protocol lets `atlas check --fix` stamp it)")
    wrong.unlink()
    right = folder / f"{TOPIC}.v0002.md"
    right.write_bytes(_hand_written(2, 1, body))
    _cli(record, say, "--fix")
    first = folder / f"{TOPIC}.v0001.md"
    original = first.read_bytes()
    first.chmod(0o644)
    first.write_bytes(original.replace(b"then start it", b"then start it twice"))
    say(f"someone 'fixes a typo' in {TOPIC} v1 in place (after making it writable):")
    _cli(record, say, str(first.relative_to(record.root)))
    first.write_bytes(original)
    first.chmod(0o444)
    say("the edit is undone: versions are immutable, a change is the next version")
    doc = artifacts.get(record, TOPIC, project=project)
    say(f"{TOPIC} is at v{doc.version}, digest {'ok' if doc.digest_ok else 'MISSING'}")
    after = check_record(record.root)
    if after.findings:
        for finding in after.findings:
            say(f"  {finding.line_text()}")
    say(f"the record now: {after.files} files, {after.errors} errors, {after.warnings} "
        f"warnings; `atlas check` exits {0 if after.ok else 1}. In a git repository the "
        "pre-commit hooks (atlas-check, atlas-links, atlas-versions) run the same checks on "
        "each commit.")
