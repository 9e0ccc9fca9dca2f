"""A command server learns what its commands import (atlas_files/server/preload.py): a
real server, real commands. It imports the installed modules its workers imported, and
never a module from outside its own install, however often a command imports one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import linksites
from support.cmdserver import served, server_status, wait_for
from support.runner import run_atlas

from atlas_files.server import wire

pytestmark = pytest.mark.skipif(not wire.supported(), reason="the server needs Linux")

# A Markdown extension outside every install: it notes each process that imports it.
PROBE = """\
import os
from markdown.extensions import Extension

with open(os.environ["PROBE_LOG"], "a") as log:
    log.write(f"extension {os.getpid()}\\n")


class Probe(Extension):
    def extendMarkdown(self, md):
        pass


def makeExtension(**kwargs):
    return Probe(**kwargs)
"""

# The site's own hook: it notes each process that imports it. Its event comes before the
# link validation (a hook whose events all come after it is not run by a check).
HOOK = """\
import os

with open(os.environ["PROBE_LOG"], "a") as log:
    log.write(f"hook {os.getpid()}\\n")


def on_page_markdown(markdown, **kwargs):
    return markdown
"""


def test_a_server_learns_installed_modules_and_never_one_from_elsewhere(
        sock: Path, tmp_path: Path) -> None:
    # Two modules from outside every install: an extension the site names, which the links
    # check never imports (it is on no toolkit's list), and the site's own hook, which
    # --run-site-hooks imports in each worker, the one way a check runs a repository's code.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "atlas_probe_ext.py").write_text(PROBE)
    log = tmp_path / "imported-by"
    env = {"PYTHONPATH": str(outside), "PROBE_LOG": str(log)}
    site = tmp_path / "site"
    linksites.site(site, text=yaml.safe_dump({
        "site_name": "t", "markdown_extensions": ["sane_lists", "atlas_probe_ext"],
        "hooks": ["probe_hook.py"]}), pages={"index.md": "# Home\n\n[a](#home) [b](#nope)\n"})
    (site / "probe_hook.py").write_text(HOOK)
    started = run_atlas("server", "start", "--socket", str(sock), env=env, process=True)
    assert started.returncode == 0, started.stderr
    server_pid = int(server_status(sock)["pid"])  # type: ignore[call-overload]
    assert server_status(sock)["learned"] == 0

    plain = run_atlas("check", "--links-only", "--json", str(site / "docs"),
                      env={**env, "ATLAS_SERVER": str(sock)}, process=True)
    # The hook's page event, not run, may make the anchor: not judged without it.
    assert plain.returncode == 0, plain.stderr
    assert served(sock) == 1
    assert any("atlas_probe_ext" in f["message"] for f in json.loads(plain.stdout)["findings"])
    assert not log.exists()  # without --run-site-hooks no module of the site is imported

    outputs = []
    for run in (2, 3):
        result = run_atlas("check", "--links-only", "--run-site-hooks", "--json",
                           str(site / "docs"), env={**env, "ATLAS_SERVER": str(sock)},
                           process=True)
        assert result.returncode == 1, result.stderr
        outputs.append(json.loads(result.stdout))
        assert served(sock) == run
        wait_for(lambda: int(server_status(sock)["learned"]) > 0)  # type: ignore[call-overload]
    assert outputs[0] == outputs[1]
    assert "ATL011" in [f["code"] for f in outputs[0]["findings"]]  # the broken anchor
    # With --run-site-hooks the extension is imported in each worker itself, and MkDocs' own
    # machinery imports the site's hook (and the extension, as it validates the config) in
    # capped children of each worker (sitehooks.py): the server imported neither.
    importers = [line.split() for line in log.read_text().splitlines()]
    by_kind = {kind: {int(pid) for k, pid in importers if k == kind}
               for kind in ("extension", "hook")}
    assert server_pid not in by_kind["extension"] | by_kind["hook"]
    assert len(by_kind["extension"]) >= 2 and len(by_kind["hook"]) >= 2
