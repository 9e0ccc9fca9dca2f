"""Demo scene: three identities share a status and a plan, and one hits the stop sign."""

from __future__ import annotations

from collections.abc import Callable

from atlas_files.cli.demo import atlas_cli
from atlas_files.protocol import artifacts, status
from atlas_files.protocol import feed as feedmod
from atlas_files.storage.record import Record


def scene(record: Record, say: Callable[[str], None]) -> None:
    say("\n== status and artifacts: three identities who never meet ==")
    v = artifacts.put(record,
        "plan", "# Plan\n\n1. Build the loader.\n2. Evaluate on the held-out set.\n",
        author="alice", project="web", summary="first plan: loader, then evaluation",
    )
    say(f"alice wrote plan v{v.version}")
    s, _ = status.write(record,
        "Loader in progress (alice). Next: evaluation. See plan.\n", author="alice",
        project="web", summary="loader in progress",
    )
    say(f"alice wrote the web status v{s.version}")

    doc = artifacts.get(record, "plan", reader="bob", project="web")
    say(f"bob read plan v{doc.version}")
    alice_read = artifacts.get(record, "plan", reader="alice", project="web")
    say(f"alice read plan v{alice_read.version} and starts thinking about a change")
    v = artifacts.put(record,
        "plan", doc.body + "3. Write the handoff for the next session.\n", author="bob",
        project="web", summary="adds the handoff step",
    )
    say(f"bob wrote plan v{v.version} while alice was thinking")

    code, _, err = atlas_cli(record, "alice", "put", "plan", "--summary", "alice's change",
                          body="# Plan\n\n1. Build the loader (done).\n")
    say(f"alice: atlas put plan -> exit {code}")
    for line in err.splitlines():
        say(f"    {line}")
    latest = artifacts.get(record, "plan", reader="alice", project="web")
    merged = latest.body.replace("1. Build the loader.", "1. Build the loader (done).")
    v = artifacts.put(record, "plan", merged, author="alice", project="web",
                   summary="loader done, merged onto bob's v2")
    say(f"alice read plan v{latest.version}, merged, and wrote plan v{v.version}")

    artifacts.put(record, "eval-results", "Accuracy 0.81 on the held-out set (run 7).\n",
               author="carol", project="ml", summary="run 7: 0.81")
    status.write(record, "Run 7 evaluated: 0.81. Next: ablations.\n", author="carol",
                        project="ml", summary="run 7 evaluated")
    say("carol wrote eval-results v1 and the ml status v1")

    for who in ("alice", "bob", "carol"):
        items = feedmod.feed(record, who)
        listed = ", ".join(f"{i.project}/{i.name} v{i.version}" for i in items) or "nothing"
        say(f"new to {who}: {listed}")
    feedmod.feed(record, "carol", mark_read=True)
    say("carol marked her feed read")
    current = status.show(record, reader="bob", project="web")
    assert current is not None
    s2, _ = status.write(record,
        current.body + "Plan at v3 (alice merged bob's handoff step). Evaluation next.\n",
        author="bob", project="web", summary="plan merged; evaluation next",
    )
    say(f"bob read the web status v{current.version} first and wrote v{s2.version} last")
