"""`atlas setup`: wire the session ritual into an agent harness's own files.

For Claude Code, Codex, Gemini CLI and Cursor it merges four hook entries into the
harness's JSON settings in DIR: at session start `atlas begin --hook H`, at each stop
`atlas end --hook H`, before each file edit `atlas guard --hook H` and after each tool call
`atlas news --hook H`. Everything else in the file is kept as it was (keys, order, other
tools' hooks); running it twice changes nothing; ``remove`` takes out only the entries it
recognises as its own (their command is an `atlas ... begin|end|guard|news --hook H`
line). It also writes a section between markers into AGENTS.md, and a pointer to it into
CLAUDE.md, with the protocol for an agent that reads no hook output. Nothing secret is
ever written: the files hold the commands, and an identity name if one is given.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atlas_files.facts import environment
from atlas_files.facts.errors import BadInput, NotFound, warn
from atlas_files.facts.names import check_name
from atlas_files.harness import registry
from atlas_files.harness.base import VERBS, Harness
from atlas_files.storage import fsio
from atlas_files.storage.record import locate

# Every harness of the table (atlas_files.harness.registry): what setup writes for each is
# its module's (settings file, events, tool hooks, entries).
HARNESSES = registry.NAMES
TARGETS = (*HARNESSES, "agents-md")
OURS = re.compile(rf"^atlas(?: --as [a-z0-9][a-z0-9._-]{{0,99}})? ({'|'.join(VERBS)}) --hook "
                  rf"({'|'.join(HARNESSES)})$")
BEGIN_MARK = "<!-- atlas-files:begin (written by `atlas setup`; `atlas setup agents-md " \
             "--remove` takes it out) -->"
END_MARK = "<!-- atlas-files:end -->"
SETTINGS_LIMIT = 4 << 20


@dataclass(frozen=True)
class Change:
    path: Path
    action: str  # created | updated | unchanged | removed

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action}


@dataclass(frozen=True)
class SetupResult:
    target: str
    identity: str | None
    removed: bool
    changes: tuple[Change, ...]
    notes: tuple[str, ...]
    # The record the hooks will find (record_for_hooks); None where they find none.
    record: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "identity": self.identity, "remove": self.removed,
                "files": [c.to_json() for c in self.changes], "notes": list(self.notes),
                "record": None if self.record is None else str(self.record)}


def record_for_hooks(folder: Path) -> Path | None:
    """The record a hook of a session in ``folder`` finds, as the hooks look for it
    (hooks.session: $ATLAS_RECORD, else the nearest atlas.yaml at or above the session's
    folder), judged by this process's environment; None where it finds none, so every
    session there starts without the record."""
    try:
        found = locate(None, starts=[folder])
    except NotFound:
        return None
    if environment.record():
        return found
    # locate also tries this process's own folder, which a hook's session may not share.
    here, there = Path(os.path.realpath(folder)), Path(os.path.realpath(found))
    return found if there == here or there in here.parents else None


def no_record_for_hooks(folder: Path, record: str | None) -> str:
    """What to say of hooks in ``folder`` that find no record, and what to do."""
    where = f"ATLAS_RECORD={os.path.abspath(record)}" if record else "ATLAS_RECORD=PATH"
    return (f"the atlas hooks in {os.path.abspath(folder)} will find no record: none is "
            "at or above that folder (a record below it is not looked for) and ATLAS_RECORD "
            f"is not set, so every session there starts without the record; set {where} in the "
            "environment the agent runs in, or keep the record in that folder or above it")


def hook_command(harness: str, verb: str, identity: str | None) -> str:
    who = f"--as {identity} " if identity else ""
    return f"atlas {who}{verb} --hook {harness}"


def _handler(harness: Harness, verb: str, identity: str | None) -> dict[str, Any]:
    """One hook entry in the harness's own form."""
    return harness.handler(verb, hook_command(harness.name, verb, identity))


def _is_ours(hook: Any) -> str | None:
    """The verb of a hook entry `atlas setup` wrote (begin, end, guard, news), else
    None."""
    if isinstance(hook, dict) and isinstance(hook.get("command"), str):
        m = OURS.match(hook["command"].strip())
        if m:
            return m.group(1)
    return None


def _shape(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadInput(f"{path} holds no JSON object; nothing was written",
                       hint="fix the file by hand, or move it aside and run setup again")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise BadInput(f"{path}: its `hooks` is not an object of lists, the form this "
                       "harness reads; nothing was written",
                       hint="fix the file by hand, then run setup again")
    return data


def merge_hooks(data: dict[str, Any], name: str, identity: str | None) -> dict[str, Any]:
    """``data`` with our hook entries in it: an entry of ours for the same event is
    updated in place (a new identity), never added twice."""
    harness = registry.load(name)
    for key, value in harness.settings_base().items():
        data.setdefault(key, value)
    hooks = data.setdefault("hooks", {})
    wanted_hooks: list[tuple[str, str, dict[str, Any], str | None]] = [
        (event, verb, _handler(harness, verb, identity), matcher)
        for event, verb, matcher in harness.hooks()]
    if harness.shell_tool:
        _shell_tool(harness, hooks, identity, wanted_hooks)
    for event, verb, wanted, matcher in wanted_hooks:
        groups = hooks.setdefault(event, [])
        found = False
        for i, group in enumerate(groups):
            if _is_ours(group) == verb and not found:  # a flat entry (Cursor's)
                groups[i] = {**group, "command": wanted["command"]}
                found = True
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            for j, hook in enumerate(handlers):
                if _is_ours(hook) == verb and not found:
                    handlers[j] = {**hook, "command": wanted["command"]}
                    found = True
        if not found:
            groups.append(harness.new_group(wanted, matcher))
    return data


def _shell_tool(harness: Harness, hooks: dict[str, Any], identity: str | None,
                wanted: list[tuple[str, str, dict[str, Any], str | None]]) -> None:
    """Where a harness's hook may rewrite a shell command but not set the shell's
    environment (``Harness.shell_tool``): with an identity, `atlas begin --hook H` also
    runs before each shell command and hands an atlas command the identity and the
    record; without one, that hook goes."""
    assert harness.shell_tool is not None
    event, matcher = harness.shell_tool
    if identity:
        wanted.append((event, "begin", harness.shell_handler(
            hook_command(harness.name, "begin", identity)), matcher))
    elif event in hooks:  # no identity to hand over any more
        hooks[event] = remove_hooks({"hooks": {event: hooks[event]}}).get(
            "hooks", {}).get(event, [])
        if not hooks[event]:
            del hooks[event]


def remove_hooks(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without our entries; a group or event list left empty by that goes too."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        groups = hooks[event]
        kept = []
        for group in groups:
            if _is_ours(group):  # a flat entry of Cursor's
                continue
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(_is_ours(h) for h in handlers):
                rest = [h for h in handlers if not _is_ours(h)]
                if not rest:
                    continue
                group = {**group, "hooks": rest}
            kept.append(group)
        if len(kept) != len(groups):
            hooks[event] = kept
        if not hooks[event] and groups:
            del hooks[event]
    if not hooks:
        del data["hooks"]
        if data == {"version": 1}:  # Cursor's file with nothing else in it
            del data["version"]
    return data


def inside(root: Path, path: Path) -> Path:
    """``path``, refused (BadInput) when it, or a folder on the way to it from ``root``, is
    a symlink: a clone may carry `.claude -> ../home/.claude`, `CLAUDE.md -> ~/.bashrc` or
    `CLAUDE.md -> .git/config`, and setup writes through none of them (one inside the
    project is refused too: what it leads to is no file setup means to write). Files are
    then read and replaced through fsio, which follows no symlink either."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if os.path.islink(here):
            try:
                target = os.readlink(here)
            except OSError:
                target = "?"
            raise BadInput(
                f"{here} is a symlink (to {target}); setup writes through no symlink, "
                "which a clone can point at any file (its .git/config, your ~/.bashrc); "
                "nothing was written",
                hint=f"replace {here.name} with a plain file or folder of its own (copy what "
                "it leads to, if that is what you meant), or run setup where it leads")
    return path


def _read_json(path: Path, real: Path) -> dict[str, Any] | None:
    try:
        raw = fsio.read_nofollow(real, SETTINGS_LIMIT)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"{path} cannot be read ({exc.strerror or exc}); nothing was written",
                       hint="check the file, then run setup again") from None
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput(
            f"{path} is not plain JSON ({str(exc)[:80]}); nothing was written (setup never "
            "rewrites a file it cannot read whole, comments included)",
            hint="add the hooks by hand: see `atlas setup --help` and docs/sessions.md",
        ) from None
    return _shape(data, path)


def _write(path: Path, real: Path, text: str | None, existed: bool) -> Change:
    """Write ``text`` to ``real``, where ``path`` leads (None: remove it)."""
    if text is None:
        if existed:
            real.unlink()
            return Change(path, "removed")
        return Change(path, "unchanged")
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = real.lstat().st_mode & 0o777 if existed else 0o644
    fsio.replace_atomic(real, text.encode("utf-8"), mode=mode)
    return Change(path, "updated" if existed else "created")


def settings_path(directory: Path, harness: str) -> Path:
    folder, name = registry.load(harness).settings
    return directory / folder / name


def _settings(path: Path, real: Path, harness: str, identity: str | None,
              remove: bool) -> Change:
    before = _read_json(path, real)
    data = json.loads(json.dumps(before)) if before is not None else {}
    after = remove_hooks(data) if remove else merge_hooks(data, harness, identity)
    if before is not None and after == before:
        return Change(path, "unchanged")
    if before is None and remove:
        return Change(path, "unchanged")
    if remove and not after:
        return _write(path, real, None, True)  # a file left empty means what no file means
    return _write(path, real, json.dumps(after, indent=2, ensure_ascii=False) + "\n",
                  before is not None)


def _read_text(path: Path, real: Path) -> tuple[str, bool]:
    """The text of ``real`` (where ``path`` leads) and whether it existed."""
    try:
        return fsio.read_nofollow(real, SETTINGS_LIMIT).decode("utf-8"), True
    except FileNotFoundError:
        return "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} cannot be read as UTF-8 text ({exc}); nothing was written",
                       hint="fix or move the file, then run setup again") from None


# Codex gives a hook no way to set the agent's shell environment (0.171), but its config
# does (``Harness.shell_config``): `shell_environment_policy.set` in the project's
# .codex/config.toml, read in a project the person trusts, as the hooks are.
TOML_BEGIN = "# atlas-files:begin (written by `atlas setup codex`; `--remove` takes it out)"
TOML_END = "# atlas-files:end"


def _codex_block(identity: str) -> str:
    return "\n".join([TOML_BEGIN, "# The agent's own shell acts as the identity the hooks act as.",
                      "[shell_environment_policy.set]", f'ATLAS_AS = "{identity}"',
                      TOML_END]) + "\n"


def _codex_shell(path: Path, real: Path, identity: str | None, remove: bool
                 ) -> tuple[Callable[[], Change], str | None]:
    """Set ATLAS_AS for Codex's agent shell in .codex/config.toml, between markers (no
    identity or ``remove``: take the block out). A file whose own
    `shell_environment_policy.set` is there already is left alone, with a note."""
    text, existed = _read_text(path, real)
    start, stop = text.find(TOML_BEGIN), text.find(TOML_END)
    rest = (text[:start].rstrip("\n") + "\n" + text[stop + len(TOML_END):].lstrip("\n")
            if start != -1 and stop > start else text)
    rest = "" if not rest.strip() else rest
    try:
        config = tomllib.loads(rest)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path} is not valid TOML ({exc}); nothing was written",
                       hint="fix the file, then run setup again") from None
    new = rest
    note = None
    if identity and not remove:
        policy = config.get("shell_environment_policy", {})
        if isinstance(policy, dict) and "set" not in policy:
            new = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + _codex_block(identity)
        else:
            note = (f"{path} sets shell_environment_policy itself: add ATLAS_AS = "
                    f'"{identity}" to its `set` so the agent\'s shell acts as {identity}')
    if new == text:
        return lambda: Change(path, "unchanged"), note
    return lambda: _write(path, real, new if new.strip() else None, existed), note


def agents_section(identity: str | None) -> str:
    who = (f"You act as `{identity}`: pass `--as {identity}` (or set ATLAS_AS={identity})."
           if identity else "Say who you are with `--as NAME` or ATLAS_AS=NAME on every "
           "write.")
    lines = [
        BEGIN_MARK,
        "## The atlas record: read first, write last",
        "",
        "Workers who never meet share this project through an atlas-files record: a",
        "status, versioned topics, leases, decisions. What is written there is all the",
        f"next session will know. {who}",
        "",
        "1. Begin with `atlas begin`: the status, what is new to you, corrections,",
        "   proposals waiting, decisions, leases and machines (a hook may run it for you).",
        "2. Read before you write: `atlas get NAME` reads a topic, `atlas feed` lists news.",
        "3. `atlas put NAME -f FILE --summary S` writes the next version. Exit 3 means",
        "   someone wrote since you read: read it, merge, write again. Never edit versions.",
        "4. Before using a shared machine: `atlas lease claim RESOURCE --for 90m --why W`.",
        "   Leases are advisory and expire by themselves; exit 4 means another holds it.",
        "   Before editing a file another may be in: `atlas activity --paths FILE`. The",
        "   edit guard (a hook) may stop such an edit: never work around it in the shell.",
        "5. Take work with `atlas task next --for 2h` (the oldest ready task, claimed",
        "   for you) and finish it with `atlas task done ID --why W`; `atlas task release",
        "   ID` gives it back. Exit 4: another holds it; exit 3: it is already done.",
        "6. Record choices: `atlas decide --topic T --recommended R --chosen C",
        "   --relation agreed|disagreed|timed-out --why W`.",
        "7. Your own mistakes: `atlas correct REF --what TEXT`, `atlas retract NAME@vN",
        "   --why TEXT`. Nothing is edited away.",
        "8. End with `atlas end --status TEXT` (or `-f FILE`): where things stand, what",
        "   comes next. It exits 1 until the status is written, 3 if the status moved",
        "   since you began (read it, merge, retry). A Stop hook, where set up, will not",
        "   let a session that wrote something stop before it wrote the status.",
        "",
        "Exit codes: 0 ok, 1 problems (or status unwritten), 2 bad input, 3 stop sign,",
        "4 held by another. `atlas --help` lists every command.",
        END_MARK,
    ]
    return "\n".join(lines) + "\n"


POINTER = "\n".join([BEGIN_MARK, "@AGENTS.md", "", "The atlas record's protocol for this "
                     "repository is in AGENTS.md (imported above).", END_MARK]) + "\n"


def _marked(path: Path, real: Path, section: str | None) -> Change:
    """Put ``section`` between the markers of ``path`` (None: take the section out)."""
    text, existed = _read_text(path, real)
    start, stop = text.find(BEGIN_MARK), text.find(END_MARK)
    if start != -1 and stop > start:
        head, tail = text[:start], text[stop + len(END_MARK):].removeprefix("\n")
    elif start != -1 or stop != -1:
        raise BadInput(f"{path} holds only one of the atlas markers; nothing was written",
                       hint=f"remove the stray marker line ({BEGIN_MARK[:24]}... or "
                       f"{END_MARK}) by hand")
    else:
        head, tail = text, ""
    if section is None:
        new = (head.rstrip("\n") + "\n" + ("\n" + tail if tail.strip() else "")
               if head.strip() else tail)
        if not new.strip():
            return _write(path, real, None, existed)
    else:
        lead = head.rstrip("\n") + "\n\n" if head.strip() else ""
        new = lead + section + ("\n" + tail if tail.strip() else "")
    if new == text:
        return Change(path, "unchanged")
    return _write(path, real, new, existed)


def setup(target: str, *, directory: str | os.PathLike[str] = ".",
          identity: str | None = None, remove: bool = False,
          trust: bool = False, record: str | None = None) -> SetupResult:
    """Wire ``target`` (claude, codex, gemini, cursor, agents-md) into ``directory``;
    ``remove`` takes out what setup wrote there for it. ``trust`` (codex only) then asks
    Codex to record the person's trust in the hooks (harness.codextrust). Hooks that
    will find no record (record_for_hooks) are written and warned of, naming ``record``
    (the one setup was pointed at, if any) as the ATLAS_RECORD to set."""
    if target not in TARGETS:
        raise BadInput(f"unknown harness {target!r}", hint=f"one of {', '.join(TARGETS)}")
    harness = registry.load(target) if target in HARNESSES else None
    if trust and (harness is None or not harness.trusts_hooks or remove):
        raise BadInput("--trust is for `setup codex`: Codex is the harness that keeps a "
                       "trust record per hook", hint="leave --trust out")
    if identity is not None:
        identity = check_name(identity, "identity")
    root = Path(directory)
    if not root.is_dir():
        raise BadInput(f"{root} is not a folder", hint="pass --dir with an existing folder")
    # Every file is checked before any is written: a refusal leaves the project as it was.
    settings = settings_path(root, target) if harness else None
    marked = [root / "AGENTS.md", root / "CLAUDE.md"] if target == "agents-md" or not remove \
        else []
    shell = root.joinpath(*harness.shell_config) if harness and harness.shell_config else None
    # A CLAUDE.md that links to AGENTS.md is AGENTS.md: left as it is, never written through.
    claude = root / "CLAUDE.md"
    same = claude in marked and os.path.islink(claude) and not os.path.islink(
        root / "AGENTS.md") and os.path.realpath(claude) == os.path.realpath(root / "AGENTS.md")
    real = {path: inside(root, path)
            for path in [p for p in (settings, shell) if p is not None] + marked
            if not (same and path == claude)}
    changes: list[Change] = []
    notes: list[str] = []
    # Read (and refused, if it must be) before the hooks are written; written after them.
    write_shell, note = (_codex_shell(shell, real[shell], identity, remove) if shell
                         else (None, None))
    if settings is not None:
        changes.append(_settings(settings, real[settings], target, identity, remove))
        if harness and not remove:
            notes.append(harness.setup_note)
    if write_shell is not None:
        changes.append(write_shell())
        notes += [note] if note else []
    for path, section in zip(marked, (agents_section(identity), POINTER), strict=False):
        if same and path == claude:
            changes.append(Change(path, "unchanged"))  # a link to AGENTS.md: it is AGENTS.md
            continue
        changes.append(_marked(path, real[path], None if remove else section))
    if not identity and not remove:
        notes.append("no identity given: the hooks act as $ATLAS_AS, so set it in the "
                     "environment the agent runs in (or run setup again with --as NAME)")
    found = None
    if settings is not None and not remove:
        found = record_for_hooks(root)
        if found is None:
            warn(no_record_for_hooks(root, record))
    if trust and harness:
        events = harness.trust(root, _is_ours)
        notes = [n for n in notes if n != harness.setup_note]
        notes.append(f"Codex now trusts the atlas hooks ({', '.join(events)}) by their "
                     "current hash, in your ~/.codex/config.toml; after they change (setup "
                     "with another --as) run setup --trust again")
    return SetupResult(target, identity, remove, tuple(changes), tuple(notes), found)
