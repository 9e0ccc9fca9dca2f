"""How a command answered before click runs, as the CLI runs one: it opens the worker
the global options name, prints through the terminal filter, says atlas's warnings as
`atlas: warning:` lines, and fails as the user sees a failure (output.guarded), a record
that moved meanwhile explained by that record."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NoReturn

from atlas_files.api import Worker
from atlas_files.facts.errors import AtlasWarning
from atlas_files.facts.names import check_name
from atlas_files.fast import output, terminal
from atlas_files.storage.record import Record


def answer(record_path: str | None, identity: str | None, project: str | None,
           sync: bool | None, command: Callable[[Worker], None], as_json: bool) -> NoReturn:
    """Run ``command`` on the worker these options open, and exit."""
    saved = terminal.install()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", AtlasWarning)
            warnings.showwarning = output.show_warning
            opened: list[Worker] = []

            def run() -> None:
                if identity:
                    check_name(identity, "identity")
                opened.append(Worker(Record.find(record_path), identity, project, sync))
                command(opened[0])

            output.guarded(run, as_json,
                           lambda exc: opened[0].record.explain(exc) if opened else exc)
    finally:
        terminal.restore(saved)
