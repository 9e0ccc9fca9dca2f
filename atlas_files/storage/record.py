"""The record: a folder with ``atlas.yaml`` at its root; finding, creating and configuring
it, and building paths inside it.

Paths are built here and nowhere else, so the rule that the record never follows a
symlinked folder is enforced in one place. What is done with the record (status,
artifacts, leases, ...) lives in the mechanism modules above this one, and the public API
over all of them in :mod:`atlas_files.api`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from atlas_files.facts import environment, guide, layout
from atlas_files.facts.errors import BadInput, NotFound, warn
from atlas_files.facts.names import check_name
from atlas_files.storage import config as configmod
from atlas_files.storage import fsio
from atlas_files.storage.documents import Stream

# The largest README or .gitignore `atlas init` reads before deciding what to write.
_INIT_READ_LIMIT = 1 << 20


def _merge_gitignore(path: Path) -> None:
    """Add the record's ignore rules to a .gitignore, keeping every line already there."""
    try:
        existing = fsio.read_nofollow(path, _INIT_READ_LIMIT).decode("utf-8", "replace")
    except FileNotFoundError:
        existing = ""
    except OSError as exc:
        # A symlink, a folder, a huge file: someone else's arrangement, left as it is.
        rules = [line for line in layout.GITIGNORE.splitlines()
                 if line and not line.startswith("#")]
        warn(f"{path} was left alone ({fsio.damage(path, exc, 'file').message}); add the "
             "record's ignore rules to it by hand: " + ", ".join(rules))
        return
    have = {line.strip() for line in existing.splitlines()}
    missing = [line for line in layout.GITIGNORE.splitlines()
               if line.strip() and not line.startswith("#") and line.strip() not in have]
    if existing and not missing:
        return
    if not existing:
        text = layout.GITIGNORE
    else:
        text = existing.rstrip("\n") + "\n\n# added by `atlas init`\n" + "\n".join(missing) + "\n"
    fsio.replace_atomic(path, text.encode())


def _is_our_readme(path: Path, title: str) -> bool:
    try:
        return fsio.read_nofollow(path, _INIT_READ_LIMIT).startswith(title.encode())
    except OSError:  # a symlink, a folder, a huge file: not a README atlas wrote
        return False


def require_identity(identity: str | None) -> str:
    """Every write names its author; refuse before anything is touched."""
    if not identity:
        raise BadInput(
            "who is writing? every write names its author, and none was given",
            hint="pass --as NAME or set ATLAS_AS=NAME",
        )
    return check_name(identity, "identity")


def holds_record(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` is a record: something not a folder is named atlas.yaml there
    (a plain file, or what Record then refuses by name: a symlink, a named pipe)."""
    try:
        return not stat.S_ISDIR(os.lstat(os.path.join(folder, layout.CONFIG_NAME)).st_mode)
    except OSError:
        return False


def enclosing(start: str | os.PathLike[str]) -> Path | None:
    """The nearest record at or above the folder ``start``, None if there is none."""
    here = Path(os.path.abspath(start))
    return next((f for f in (here, *here.parents) if holds_record(f)), None)


def named_in_git(repo: str | os.PathLike[str], configured: str) -> Path:
    """The record that `git config atlas.record` (``configured``) names for the
    repository at ``repo``: relative to its root, ``~`` expanded. NotFound if no record
    is there."""
    return locate(Path(repo) / Path(configured).expanduser(), {})


def locate(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
           starts: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """The record's folder, not yet opened: ``path``, else ``$ATLAS_RECORD``, else the
    nearest folder holding atlas.yaml at or above each of ``starts``, then the current
    folder. The one home of this rule: every front end and `atlas check` find records so."""
    environ = os.environ if env is None else env
    explicit = path or environment.record(None, environ)
    if explicit:
        root = Path(explicit)
        if not holds_record(root):
            raise NotFound(
                f"no record at {root} (it has no {layout.CONFIG_NAME})",
                hint="create one with `atlas init DIR`, or point to one with --record or "
                "ATLAS_RECORD",
            )
        return root
    here = Path.cwd()
    for start in (*starts, here):
        found = enclosing(start)
        if found is not None:
            return found
    raise NotFound(
        f"no record here: neither {here} nor any folder above it has an {layout.CONFIG_NAME}",
        hint="pass --record PATH, set ATLAS_RECORD, or create one with `atlas init DIR`",
    )


class Record:
    """A record folder. Open one with ``Record.find()`` or create one with ``Record.init()``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._real_root = os.path.realpath(self.root)
        self._safe: set[Path] = {self.root}  # paths known not to lead outside
        # Held from the start: every write walks from this descriptor (see fsio.OpenRoot),
        # so a record moved or deleted while the command runs is refused, never written
        # into as a stray folder at the old path.
        try:
            self.opened = fsio.OpenRoot(self.root, layout.CONFIG_NAME)
            mode = os.stat(layout.CONFIG_NAME, dir_fd=self.opened.fd).st_mode
        except OSError:
            mode = None
        if mode is None and os.path.islink(self.root / layout.CONFIG_NAME):
            raise fsio.damage(self.root / layout.CONFIG_NAME,
                              OSError(errno.ELOOP, "a symlink"), "config file")
        if mode is not None and not stat.S_ISREG(mode):
            raise fsio.damage(self.root / layout.CONFIG_NAME,
                              fsio.not_a_file(mode, self.root / layout.CONFIG_NAME),
                              "config file")
        if mode is None:
            raise NotFound(
                f"no record at {self.root} (it has no {layout.CONFIG_NAME})",
                hint="create one with `atlas init DIR`, or point to one with --record or "
                "ATLAS_RECORD",
            )

    def __repr__(self) -> str:
        return f"Record({str(self.root)!r})"

    def explain(self, exc: BaseException) -> BaseException:
        """``exc`` as the user should see it: a command whose record was moved, deleted or
        replaced while it ran failed because of that (its reads, by the record's path,
        found nothing there), and RecordGone says so instead of "no v1" or "not found"."""
        gone = self.opened.gone()
        return exc if gone is None else gone

    # -- finding and creating -------------------------------------------------------------

    @classmethod
    def find(
        cls, path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
    ) -> Record:
        """``path``, else ``$ATLAS_RECORD``, else the nearest folder upward with atlas.yaml."""
        return cls(locate(path, env))

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        projects: Sequence[str] = (),
        default_project: str | None = None,
    ) -> Record:
        """Create a record at ``path``, or add projects to the record already there."""
        if not os.fspath(path):
            # Path("") is the current folder: an empty argument (an unset variable in
            # `atlas init "$DIR"`) would make wherever the shell stands a record.
            raise BadInput("the record's folder is empty text, which would make the current "
                           "folder a record", hint="name the folder; `atlas init .` for the "
                           "current one")
        root = Path(path)
        wanted = [check_name(p, "project name") for p in projects]
        twice = sorted({p for p in wanted if wanted.count(p) > 1})
        if twice:
            raise BadInput(f"project {', '.join(twice)} is named more than once; a record "
                           "lists each project once (`atlas check` refuses it otherwise)",
                           hint="name each project once")
        if default_project:
            check_name(default_project, "project name")
        config_path = root / layout.CONFIG_NAME
        if config_path.exists():
            record = cls(root)
            wanted_all = wanted + ([default_project] if default_project else [])

            def add(data: dict[str, Any]) -> dict[str, Any]:
                known = list(data.get("projects") or [])
                data["projects"] = known + [p for p in dict.fromkeys(wanted_all)
                                            if p not in known]
                if default_project:
                    data["default_project"] = default_project
                return data

            if any(p not in record.config.projects for p in wanted_all) or (
                default_project and default_project != record.config.default_project
            ):
                record.update_config(add)
                record = cls(root)
            for project in record.config.projects:
                record._make_project(project)
            return record
        if root.exists() and not root.is_dir():
            raise BadInput(f"{root} exists and is not a folder", hint="choose another path")
        outer = enclosing(Path(os.path.abspath(root)).parent)
        if outer is not None:
            raise BadInput(
                f"{root} lies inside the record at {outer}: a record inside a record would "
                "share its folders (each command finds the nearest atlas.yaml)",
                hint=f"choose a folder outside {outer}; to add a project to that record, "
                f"`atlas init {outer} --project NAME`")
        root.mkdir(parents=True, exist_ok=True)
        projects_list = wanted or ["main"]
        default = default_project or projects_list[0]
        if default not in projects_list:
            projects_list.append(default)
        for folder in layout.ROOT_FOLDERS:
            (root / folder).mkdir(exist_ok=True)
        _merge_gitignore(root / ".gitignore")
        readme = root / "README.md"
        if os.path.lexists(readme) and not _is_our_readme(readme, guide.TITLE):
            # Never replace a README someone else wrote: the guide goes beside it.
            readme = root / guide.BESIDE_NAME
        fsio.replace_atomic(readme, guide.record_readme().encode())
        # atlas.yaml last: its presence is what makes the folder a record.
        data = configmod.default_config(projects_list, default)
        fsio.replace_atomic(config_path, configmod.render(data))
        record = cls(root)
        for project in projects_list:
            record._make_project(project)
        return record

    def update_config(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Rewrite atlas.yaml as ``change`` makes it, under one lock for every rewriter.

        The change is applied to the file as read under the lock, so two rewriters never
        lose each other's update. The rewrite keeps atlas-files' own header comment but
        not comments added by hand (the file is dumped anew).
        """
        path = self.root / layout.CONFIG_NAME
        with fsio.open_folder(self.root, within=self.opened) as root, \
                root.locked(layout.CONFIG_LOCK):
            current = self._load_config()
            data = change(dict(current.raw))
            configmod.from_mapping(data, path)  # refuse a change that breaks the config
            root.replace_atomic(layout.CONFIG_NAME, configmod.render(data))
        self.__dict__.pop("config", None)

    def _make_project(self, project: str) -> None:
        for sub in layout.PROJECT_FOLDERS:
            self.make_folders(self.path(layout.PROJECTS, project, sub))

    def make_folders(self, folder: Path) -> Path:
        """Make ``folder`` (a path of this record) and the folders above it, walked from
        the record's held descriptor: never outside the record, never through a symlink."""
        return fsio.make_folders(folder, within=self.opened)

    # -- config ---------------------------------------------------------------------------

    @cached_property
    def config(self) -> configmod.Config:
        return self._load_config()

    def _load_config(self) -> configmod.Config:
        """atlas.yaml as it is in the folder this record opened (see configmod.read)."""
        path = self.root / layout.CONFIG_NAME
        try:
            data = self.opened.read(layout.CONFIG_NAME, configmod.CONFIG_LIMIT)
        except FileNotFoundError:
            self.opened.verify()  # deleted since it was opened: RecordGone says so
            raise
        except OSError as exc:
            raise fsio.damage(path, exc, "config file") from None
        return configmod.load(path, data)

    def project(self, name: str | None = None) -> str:
        """The project ``name`` (or the default one), checked to exist in atlas.yaml."""
        cfg = self.config
        if not name:
            if not cfg.default_project:
                raise BadInput(
                    "no project given and atlas.yaml names no default_project",
                    hint="pass --project NAME",
                )
            name = cfg.default_project
        check_name(name, "project name")
        if name not in cfg.projects:
            known = ", ".join(cfg.projects) or "none"
            raise NotFound(
                f"no project {name!r} in this record (projects: {known})",
                hint=f"add it with `atlas init {self.root} --project {name}`",
            )
        return name

    # -- paths ----------------------------------------------------------------------------

    def path(self, *parts: str) -> Path:
        """A path inside the record; refuses one that passes through a symlink.

        A symlinked folder is refused wherever it leads: outside the record it would read
        and write foreign files, inside it a write to one topic (or project) would land in
        another's folder. Each component is checked once per Record with one lstat.
        """
        p = self.root
        for part in parts:
            p = p / part
            if p in self._safe:
                continue
            try:
                mode = os.lstat(p).st_mode
            except OSError:  # not there (yet): nothing to follow
                continue
            if stat.S_ISLNK(mode):
                raise self._symlinked(p)
            if stat.S_ISDIR(mode):  # only folders are cached: a file may be replaced later
                self._safe.add(p)
        return p

    def _symlinked(self, p: Path) -> BadInput:
        real = os.path.realpath(p)
        if real == self._real_root or real.startswith(self._real_root + os.sep):
            where = f"to {os.path.relpath(real, self._real_root)} inside the record"
        else:
            where = "that leads outside the record"
        return BadInput(
            f"{p} is a symlink {where}; the record never follows a symlinked folder "
            "(a write through it would land in another folder)",
            hint="replace the symlink with a real folder (or remove it); `atlas check` "
            "lists such problems",
        )

    @property
    def receipts_dir(self) -> Path:
        return self.path(layout.RECEIPTS)

    @property
    def leases_dir(self) -> Path:
        return self.path(layout.LEASES)

    @property
    def telemetry_dir(self) -> Path:
        return self.path(layout.TELEMETRY)

    def project_dir(self, project: str | None = None) -> Path:
        return self.path(layout.PROJECTS, self.project(project))

    def has_entries(self, project: str, kind: str) -> bool:
        """Whether ``projects/<project>/<kind>/`` (decisions, corrections) holds any entry."""
        try:
            with os.scandir(self.path(layout.PROJECTS, project, kind)) as it:
                return any(not e.name.startswith(".") for e in it)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def status_stream(self, project: str | None = None) -> Stream:
        p = self.project(project)
        return Stream(self.path(layout.PROJECTS, p, layout.STATUS), "status",
                      f"the status of {p}", self.config.body_limit, self.opened)

    def artifact_stream(self, name: str, project: str | None = None) -> Stream:
        p = self.project(project)
        check_name(name, "topic name")
        if name == "status":
            raise BadInput(
                "'status' is the name of the status stream, not a topic",
                hint="use `atlas status show|write`, or choose another topic name",
            )
        return Stream(self.path(layout.PROJECTS, p, layout.ARTIFACTS, name), name, name,
                      self.config.body_limit, self.opened)

    def describe(self) -> dict[str, Any]:
        return {"root": str(self.root), "projects": list(self.config.projects)}
