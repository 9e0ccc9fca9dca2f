"""The record's own README: the protocol told to an agent that only has file access; and
what bare `atlas` says to someone who has just installed it."""

from __future__ import annotations

TITLE = "# This folder is an atlas-files record"
# Where the guide goes when the folder already has a README of its own.
BESIDE_NAME = "ATLAS-README.md"


# Bare `atlas`, the first thing a newcomer types: what atlas is and where to start, not
# every command (that is `atlas --help`).
START = """\
atlas: a plain-files record for workers who never meet (agent sessions, people): they
share work only through what is written down, so each reads first and writes last.

Start with:
  atlas init DIR                 make a record in DIR (once per team)
  atlas status show              read the project's status first
  atlas get NAME                 read a topic (`atlas ls` lists them)
  atlas put NAME -f FILE         write its next version (exit 3: someone wrote since you read)
  atlas status write -f FILE     write the status last

Who acts: --as NAME (or ATLAS_AS); the record: --record DIR (or ATLAS_RECORD), else the
nearest folder upward with an atlas.yaml.
`atlas --help` lists every command; `atlas COMMAND --help` tells one.
"""


def record_readme() -> str:
    return TITLE + """

Several workers share this folder without ever meeting. Nobody remembers the others and
nobody can ask a question and wait: what is written here is all there is. Follow these
rules whether you use the `atlas` command or edit files by hand.

## 1. Read first, write last

- Before anything else, read the project's status: the newest
  `projects/<project>/status/status.vNNNN.md` (or `atlas status show`). Note its version
  and its age: a status written a month ago describes a month-old world.
- Before you stop, write the next status version (`atlas status write`). A session that
  skips this has, for everyone after it, not happened.
- `atlas feed` lists every status and topic with a version newer than you have read.

With the `atlas` command, `atlas begin` is the read: the status in full, then what is
new to you (corrections, topics, proposals, decisions), the leases held and machines to
know about, within a bounded size. `atlas end --status TEXT` is the write: it writes the
status (exit 3 if it moved since you read it) and exits 1 while a session that began with
`atlas begin` has not written one. `sessions/<identity>.json` is the row `begin` leaves;
it is local state, not a document: leave it alone.

## 2. Documents are immutable and versioned

- A topic is a folder `projects/<project>/artifacts/<name>/` holding
  `<name>.v0001.md`, `<name>.v0002.md`, ... One name per topic: never stack two
  unrelated things on one name.
- Never edit or delete a version file. To change a document, write the next version.
  Published files are read-only and carry a `digest` of their body; `atlas check`
  reports any edit in place.
- To write version N+1 by hand, create `<name>.v{N+1:04d}.md` (four digits at least) with
  this front matter, then the body:

  ```
  ---
  name: plan
  version: 4
  based_on: 3          # the version you read before writing
  author: your-name
  written_at: "2026-01-31T12:00:00Z"
  summary: one line saying what changed
  ---
  ```

  Leave out `digest`; `atlas check --fix` stamps it. Keep the body within the record's
  `body_limit` (bytes, in `atlas.yaml`), and write front matter without YAML anchors or
  aliases (`&name`, `*name`): readers refuse both.

## 3. The version-jump stop sign

If you read vN and the folder now holds vN+1 or later, someone wrote while you were
thinking. Do not write vN+2 over their head: read what they wrote, merge, and write
again. `atlas put` and `atlas status write` refuse such a write with exit code 3 and name
who wrote since.

## 4. Leases are advisory

`leases/` is a sign-up sheet for shared machines, claimed with `atlas lease claim`.
Nothing enforces it, a lease expires by itself, and an empty sheet does not prove a
machine is idle: a worker that took no lease is invisible there.

Reading a lease by hand is safe: `leases/<resource>/` holds one file per change,
`g00000001.json`, `g00000002.json`, ...; the highest number is the lease's state. It is
held if its `holder` is not null and its `expires_at` (UTC) is still in the future. A
lease with `paths` covers those files of a code repository (globs relative to its root,
`src/` for a folder, `**` for any depth): before editing one, look for such a lease held
by someone else.

Do not take, renew or release a lease by writing files. A change is the creation of the
next generation file, and it is safe only because `atlas` creates that file exclusively:
of two workers who both read generation 7, exactly one can create generation 8. A
file-writing tool replaces a file that appeared a moment ago instead of failing, so two
agents writing by hand could both believe they hold the machine. Without the `atlas`
command, say in the status what you are about to use instead.

## 5. Decisions, corrections, retractions

Decisions (`projects/<project>/decisions/`) record what was recommended, what was chosen,
and why they stand where they do, each as its own field; the relation (agreed, disagreed,
timed-out) is stated, never inferred. Each decision is one file that is never edited. To
add one by hand, create a new file in that folder named after its `id`,
`dec-20260131t120000000000z-1a2b3c4d.md`: `dec-`, the UTC date, `t`, the time to the
microsecond, `z-`, then eight hex digits you pick at random. It holds only front matter:

```
---
id: "dec-20260131t120000000000z-1a2b3c4d"
kind: "decision"
at: "2026-01-31T12:00:00.000000Z"
author: "your-name"
project: "main"
topic: "which database the service uses"
recommended: "postgres"
chosen: "sqlite"
relation: "disagreed"
why: "one writer and no server to run; revisit past 10 writers"
---
```

Every field above is required: `id` (the file name without `.md`), `kind` (`decision`),
`at` (the same time as in the id, UTC), `author` (your name), `project` (the project
folder it lies in), `topic` (one line), `recommended`, `chosen`, `relation` (`agreed`,
`disagreed` or `timed-out`) and `why`. Optional: `recommended_by` (a name), `links` (a
list such as `["plan@v3"]`) and `accepts` (a proposal, `NAME@vN`). Leave out `digest`;
`atlas check --fix` stamps it.

If you find you wrote something wrong, say so with `atlas correct REF --what TEXT` or
`atlas retract NAME@vN --why TEXT`: a correction is a new entry, nothing is edited away,
and the corrected item is marked wherever it is read. By hand, a correction is a file in
`projects/<project>/corrections/` named like a decision but starting `cor-`, with the
fields `id`, `kind` (`correction`), `at`, `author`, `project`, `ref` (what it corrects:
`NAME@vN`, `status@vN` or an entry id) and `what` (what was wrong and what is right); a
retraction has `kind: "retraction"`, a `ref` of the form `NAME@vN`, and `why` in place
of `what`.

## 6. What the checks reject

`atlas check` (and the pre-commit hooks) report: files that do not match their schema,
gaps in version numbers, versions edited in place, a `based_on` older than the version
before, broken relative links and anchors, links to superseded or retracted versions,
references to versions or entries that do not exist, leases longer than the cap, and
crash debris (`.atlas-tmp-*` files).

## 7. Before you edit a file someone else may be in

Read the repository's recent history on every branch before you start work in a file:
`atlas activity --paths FILE` (or `git log --all --since=1.hour -- FILE` after a `git
fetch`), and look for a path lease on it (`atlas lease ls --path FILE`). Commits from
minutes ago by another worker mean that worker is in that file right now: if the work is
right but the timing is not, record it instead of starting it (`atlas decide ...
--relation disagreed --why "timing: ..."`), or write to them through the record.

Where the harness runs atlas's hooks (`atlas setup`), `atlas guard` does this before each
edit of its file tools: it refuses an edit of the record's own files (use `atlas put`,
`atlas status write`, `atlas correct`), stops an edit under another's unexpired path
lease for a person to decide, and tells you of recent commits by others; `atlas news`
tells you, while you work, what changed in what you read. The guard is advisory and sees
only the harness's file tools: never work around it with a shell command that writes the
file.

## Exit codes of `atlas`

0 ok, 1 check found problems, 2 bad input (nothing written), 3 stop sign (nothing
written: read, merge, retry), 4 held by another (lease).
"""
