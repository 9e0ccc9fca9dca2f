"""The command server: a warm process that runs `atlas` command lines for a thin client.

Starting Python and importing click, YAML and atlas is most of what a small command
costs (bench/bench_core.py); a hook or an auto-synced write pays it hundreds of times a
session. With ``ATLAS_SERVER`` set, `atlas` hands its command line, environment, working
folder and standard streams to a server of the same install over a Unix socket; the
server forks a copy of itself with everything imported, which runs the command as the
process would have, and the client exits with its exit status. Mercurial's chg does the
same for the same reason.

- ``wire``: where the socket lies, who may use it, and the request's shape (the client
  imports only this, so it must stay cheap);
- ``client``: what `atlas` does when ``ATLAS_SERVER`` is set;
- ``serve``: the server's loop, and the forked worker that runs one command.
"""
