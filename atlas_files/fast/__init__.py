"""The commands answered before click is imported: `atlas task ls` and `atlas task next`,
which agents run at every turn, and the output and failures every command shares.

Nothing here imports click or the CLI (the launch test checks): output.py is what the
CLI prints through too, tasks.py the two commands. This face hands on no names, so that
importing one module does not import the other.
"""
