"""Demo scene: two identities compete for one GPU; one is refused (exit 4), the holder
releases, the other takes over; a dead holder's lease is broken, and the break recorded."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from atlas_files.cli import demo
from atlas_files.facts import timeutil
from atlas_files.protocol import leases
from atlas_files.storage.record import Record

GPU = "gpubox.gpu0"


def _cli(record: Record, who: str, *args: str) -> tuple[int, list[str]]:
    """The real `atlas` command as ``who`` (the shared demo runner): the exit code is
    what a script would see, and the lines are what it prints."""
    code, out, err = demo.atlas_cli(record, who, *args)
    return code, [line for line in (out + "\n" + err).splitlines() if line.strip()]


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== leases: two identities compete for one GPU ==")
    mine = leases.claim(record, GPU, holder="alice", duration_s=2 * 3600,
                        why="training run 8 (web loader)")
    say(f"alice claimed {GPU} for 2h: generation {mine.generation}, until {mine.expires_at}")

    args = ("lease", "claim", GPU, "--for", "1h", "--why", "evaluation sweep")
    code, lines = _cli(record, "bob", *args)
    say(f"bob: atlas {' '.join(args[:-1])} '{args[-1]}' -> exit {code}")
    for line in lines:
        say(f"    {line}")

    freed = leases.release(record, GPU, holder="alice")
    say(f"alice finished early and released {GPU}: generation {freed.generation}, "
        f"{freed.state}")
    code, lines = _cli(record, "bob", *args)
    say(f"bob: atlas {' '.join(args[:-1])} '{args[-1]}' -> exit {code}")
    for line in lines:
        say(f"    {line}")

    crashed = leases.claim(record, "gpubox.gpu1", holder="carol", duration_s=3600,
                           why="ablation a3")
    say(f"carol claimed gpubox.gpu1 for 1h (generation {crashed.generation}); her job then "
        "crashed, and the lease would hold the GPU for the rest of the hour")
    broke = leases.break_lease(record, "gpubox.gpu1", holder="alice",
                               why="carol's ablation a3 crashed; no process left on the GPU")
    say(f"alice broke it (generation {broke.generation}); the history keeps carol as the "
        "previous holder and alice's reason")

    say("the sign-up sheet now (`atlas lease ls`):")
    for lease in leases.ls(record):
        if lease.held:
            left = timeutil.format_duration(lease.expires_in_s or 0)
            say(f"    {lease.resource:<14} held by {lease.holder}, {left} left, generation "
                f"{lease.generation}: {lease.why}")
        else:
            say(f"    {lease.resource:<14} free ({lease.ended}), generation {lease.generation}")
    _, history = leases.show(record, GPU)
    say(f"the history of {GPU}:")
    for g in history:
        say(f"    g{g.generation} {g.action:<8} {g.holder or '-':<6} {g.ended or ''}")
    say("and the limits that every `atlas lease ls` prints beside the sheet:")
    for line in textwrap.wrap(leases.ADVISORY, 88):
        say(f"    {line}")
