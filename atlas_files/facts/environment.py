"""The environment atlas reads: who is acting, which record, which project, and the
variables of git's that decide what a look at a repository's files may trust.

Every front end (the CLI's global options, the fast hooks, the edit guard, the API's
``Worker.open``) takes these from here, so a variable read one way in one place and
another way elsewhere cannot happen. Only the standard library: anything may import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

AS = "ATLAS_AS"  # who is acting (--as)
RECORD = "ATLAS_RECORD"  # the record's folder (--record)
PROJECT = "ATLAS_PROJECT"  # the project (--project, -p)
# The global options as click names them, with the variable behind each.
GLOBALS = {"record_path": RECORD, "identity": AS, "project": PROJECT}

# Variables that make git read another repository, work tree, index or object store than
# the folder's own ``.git``, or that move git's search for one: with any of them set,
# only git can say where things are, and a look at the files alone is not trusted.
GIT_MOVED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
             "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
             "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")
# Variables that add config to git, or move the files it reads config from.
GIT_CONFIG = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
              "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG", "HOME",
              "XDG_CONFIG_HOME", "GIT_DIR", "GIT_COMMON_DIR")


def _read(variable: str, given: str | None, env: Mapping[str, str] | None) -> str | None:
    return given or (os.environ if env is None else env).get(variable) or None


def identity(given: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """Who is acting: ``given`` (--as), else ``$ATLAS_AS``; None when neither says."""
    return _read(AS, given, env)


def record(given: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The record named: ``given`` (--record), else ``$ATLAS_RECORD``; None when neither
    names one (then it is looked for upward)."""
    return _read(RECORD, given, env)


def project(given: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The project: ``given`` (--project), else ``$ATLAS_PROJECT``; None for the
    record's default."""
    return _read(PROJECT, given, env)


def options(found: Mapping[str, str | None],
            env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The global options by GLOBALS' keys: each as the command line gave it in ``found``
    (an empty value stays None), else from its variable, as the full CLI reads them for
    the commands answered before click."""
    environ = os.environ if env is None else env
    return {key: found[key] if key in found else environ.get(variable) or None
            for key, variable in GLOBALS.items()}


def git_moved(env: Mapping[str, str] | None = None) -> bool:
    """Whether a variable of ``GIT_MOVED`` is set (even empty: git may still read it)."""
    environ = os.environ if env is None else env
    return any(name in environ for name in GIT_MOVED)
