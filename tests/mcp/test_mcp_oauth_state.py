"""The OAuth state beside the tokens file: it survives a restart, it is refused when
others can read it (at start, by a running server, by the commands), `atlas mcp token
ls` shows its grants and `revoke` ends them."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx2
from support.oauth import code_by_hand, exchange, mcp_status, process, start_by_hand
from support.runner import run_atlas

from atlas_files.mcp import oauthstore, tokens
from atlas_files.storage.record import Record


def places(tmp_path: Path) -> tuple[Path, Path]:
    record = Record.init(tmp_path / "rec")
    (tmp_path / "private").mkdir()
    return record.root, tmp_path / "private" / "tokens.json"


def test_grants_and_waiting_requests_survive_a_restart(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    # Tokens are for one address: a restart keeps it with --public-url (or the port).
    public = ("--public-url", "http://localhost:8765")
    with process(root, tokens_file, tmp_path / "one.log", *public) as first:
        got = exchange(first, code_by_hand(first, "alice")).json()
        waiting = start_by_hand(first)
    state = oauthstore.state_path(tokens_file)
    assert state.name == "tokens.oauth.json" and state.parent == tokens_file.parent
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    text = state.read_text()
    assert got["access_token"] not in text and got["refresh_token"] not in text
    with process(root, tokens_file, tmp_path / "two.log", *public) as second:
        assert mcp_status(second, got["access_token"]) == 200
        rid = waiting.consent.rsplit("/", 1)[1]
        code, _, err = run_atlas("mcp", "approve", rid, "--as", "bob", "--tokens", str(tokens_file))
        assert code == 0, err
        moved = f"{second.base}/consent/{rid}"  # the public URL's port is not bound here
        assert "code=" in httpx2.get(moved, timeout=30).headers["location"]
    with process(root, tokens_file, tmp_path / "three.log") as elsewhere:
        assert mcp_status(elsewhere, got["access_token"]) == 401  # issued for another address


def test_a_state_file_others_can_read_is_refused(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    with process(root, tokens_file, tmp_path / "server.log") as server:
        got = exchange(server, code_by_hand(server, "alice")).json()
        state = oauthstore.state_path(tokens_file)
        state.chmod(0o644)
        assert mcp_status(server, got["access_token"]) == 401  # fail closed while running
        for args in (("pending",), ("approve", "0" * 12, "--as", "bob"), ("token", "ls"),
                     ("token", "revoke", "alice")):
            code, _, err = run_atlas("mcp", *args, "--tokens", str(tokens_file))
            assert code == 2 and "can be read or changed by others" in err, args
        state.chmod(0o600)
        assert mcp_status(server, got["access_token"]) == 200


def test_token_ls_shows_oauth_grants_and_revoke_ends_them(tmp_path: Path) -> None:
    root, tokens_file = places(tmp_path)
    tokens.add(tokens_file, "alice")
    with process(root, tokens_file, tmp_path / "server.log") as server:
        first = exchange(server, code_by_hand(server, "alice", name="Claude")).json()
        other = exchange(server, code_by_hand(server, "bob", name="ChatGPT")).json()
        code, out, err = run_atlas("mcp", "token", "ls", "--tokens", str(tokens_file), "--json")
        assert code == 0, err
        listed = json.loads(out)
        assert [t["identity"] for t in listed["tokens"]] == ["alice"]
        assert [(g["identity"], g["client_name"]) for g in listed["grants"]] == \
            [("alice", "Claude"), ("bob", "ChatGPT")]
        assert all(set(g) == {"identity", "id", "created_at", "client_id", "client_name",
                              "refresh_expires_at"} for g in listed["grants"])
        assert first["access_token"] not in out and first["refresh_token"] not in out
        code, out, _ = run_atlas("mcp", "token", "ls", "--tokens", str(tokens_file))
        assert code == 0 and "OAuth grant to 'Claude'" in out
        code, out, err = run_atlas("mcp", "token", "revoke", "alice", "--tokens", str(tokens_file),
                                   "--json")
        assert code == 0 and json.loads(out) == {"identity": "alice", "revoked": 2}, err
        assert mcp_status(server, first["access_token"]) == 401
        assert mcp_status(server, other["access_token"]) == 200
        code, _, err = run_atlas("mcp", "token", "revoke", "alice", "--tokens", str(tokens_file))
        assert code == 2 and "holds no token for alice" in err


def test_the_commands_need_the_tokens_file_and_a_real_request(tmp_path: Path) -> None:
    _, tokens_file = places(tmp_path)
    code, _, err = run_atlas("mcp", "pending", "--tokens", str(tokens_file))
    assert code == 2 and "no tokens file" in err
    tokens.ensure(tokens_file)
    code, out, _ = run_atlas("mcp", "pending", "--tokens", str(tokens_file), "--json")
    assert code == 0 and json.loads(out) == {"requests": []}
    code, _, err = run_atlas("mcp", "approve", "nothing", "--as", "bob", "--tokens",
                             str(tokens_file))
    assert code == 2 and "no connection request nothing" in err
    code, _, err = run_atlas("mcp", "approve", "x", "--tokens", str(tokens_file))
    assert code == 2 and "--as" in err
    code, _, err = run_atlas("mcp", "--oauth", "pending", "--tokens", str(tokens_file))
    assert code == 2 and "belong to the server" in err
