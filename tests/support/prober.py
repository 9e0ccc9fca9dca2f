"""What the telemetry prober's tests share: a sample a probe answers with, and the
prober's own home folder, so that its approvals never touch the real one."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

# A machine's answer: no GPU driver, so no GPUs; `ANSWER` is a probe that prints it.
SAMPLE = json.dumps({"host": "box", "sampled_at": None,
                     "nvml": {"available": False, "reason": "no driver"}, "gpus": []})
ANSWER = f"printf '%s' {shlex.quote(SAMPLE)}"


def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own for the prober (its approvals and probes files),
    with no XDG_CONFIG_HOME to lead elsewhere."""
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return folder
