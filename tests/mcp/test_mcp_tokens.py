"""`atlas mcp token add|revoke|ls` and the verifier behind `atlas mcp --http`: tokens are
shown once, stored only as hashes, in a file nobody else may read, outside the record."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from support.mcp_client import run
from support.runner import run_atlas

from atlas_files.mcp.tokens import TokenVerifier
from atlas_files.storage.record import Record


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    (tmp_path / "private").mkdir()
    return tmp_path / "private" / "tokens.json"


def add(path: Path, name: str) -> dict[str, Any]:
    code, out, err = run_atlas("mcp", "token", "add", name, "--tokens", str(path), "--json")
    assert code == 0, err
    return dict(json.loads(out))


def test_a_token_is_shown_once_and_only_its_hash_is_kept(tokens_file: Path) -> None:
    made = add(tokens_file, "alice")
    assert set(made) == {"identity", "token"} and made["identity"] == "alice"
    code, out, err = run_atlas("mcp", "token", "add", "bob", "--tokens", str(tokens_file))
    assert code == 0 and "shown this once" in err
    bobs = out.strip()
    stored = tokens_file.read_text()
    assert made["token"] not in stored and bobs not in stored
    assert hashlib.sha256(made["token"].encode()).hexdigest() in stored
    assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
    code, out, _ = run_atlas("mcp", "token", "ls", "--tokens", str(tokens_file), "--json")
    listed = json.loads(out)["tokens"]
    assert [t["identity"] for t in listed] == ["alice", "bob"]
    assert all(set(t) == {"identity", "id", "created_at"} and len(t["id"]) == 8
               for t in listed)
    assert made["token"] not in out and bobs not in out


def test_revoke_ends_every_token_of_a_name_and_the_verifier_sees_it(tokens_file: Path) -> None:
    first = add(tokens_file, "alice")["token"]
    second = add(tokens_file, "alice")["token"]
    bobs = add(tokens_file, "bob")["token"]
    verifier = TokenVerifier(tokens_file)
    assert verifier.identity(first) == verifier.identity(second) == "alice"
    assert verifier.identity(bobs) == "bob" and verifier.identity(first + "x") is None
    access = run(lambda: verifier.verify_token(bobs))
    assert access is not None and access.client_id == access.subject == "bob"
    code, out, _ = run_atlas("mcp", "token", "revoke", "alice", "--tokens",
                             str(tokens_file), "--json")
    assert code == 0 and json.loads(out) == {"identity": "alice", "revoked": 2}
    assert verifier.identity(first) is None and verifier.identity(second) is None
    assert verifier.identity(bobs) == "bob"
    code, _, err = run_atlas("mcp", "token", "revoke", "alice", "--tokens", str(tokens_file))
    assert code == 2 and "holds no token for alice" in err


def test_a_file_others_can_read_is_refused_and_grants_nothing(tokens_file: Path) -> None:
    token = add(tokens_file, "alice")["token"]
    verifier = TokenVerifier(tokens_file)
    tokens_file.chmod(0o644)
    assert verifier.identity(token) is None  # fail closed while the server runs
    for args in (("ls",), ("add", "bob"), ("revoke", "alice")):
        code, _, err = run_atlas("mcp", "token", *args, "--tokens", str(tokens_file))
        assert code == 2 and "can be read or changed by others" in err, args
        assert "chmod 600" in err
    tokens_file.chmod(0o600)
    assert verifier.identity(token) == "alice"


def test_a_tokens_file_inside_a_record_is_refused(tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec")
    for where in (record.root / "tokens.json", record.root / "projects" / "t.json"):
        code, _, err = run_atlas("mcp", "token", "add", "alice", "--tokens", str(where))
        assert code == 2 and "lies inside the record" in err
        assert not where.exists() and not where.with_name(where.name + ".lock").exists()


def test_bad_names_and_damaged_files_are_plain_errors(tokens_file: Path) -> None:
    code, _, err = run_atlas("mcp", "token", "add", "Not A Name", "--tokens",
                             str(tokens_file))
    assert code == 2 and err.startswith("atlas: error: ")
    tokens_file.write_text("[1, 2]")
    tokens_file.chmod(0o600)
    code, _, err = run_atlas("mcp", "token", "ls", "--tokens", str(tokens_file))
    assert code == 2 and "is not a tokens file atlas wrote" in err
    code, _, err = run_atlas("mcp", "token", "ls", "--tokens", str(tokens_file.parent / "x"))
    assert code == 2 and "no tokens file at" in err
