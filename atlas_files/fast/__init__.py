"""The commands answered before click is imported, each only on exactly its own command
lines: `atlas status show` (status.py), read at every session's start; `atlas task ls`
and `atlas task next` (tasks.py), run at every turn; the links pre-commit hook's `atlas
check --links-only` (check.py); and what every command prints and how it fails
(output.py, versions.py, terminal.py), which the CLI prints through too.

Nothing here imports click or the CLI (the launch test checks). This face hands on no
names, so that importing one module does not import the others.
"""
