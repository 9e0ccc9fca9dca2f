"""What the tests share, and no tests: the helpers and fixtures test modules import (a test
module never imports another test module). The fixtures registered for every module are in
conftest.py's ``pytest_plugins``; bench/ scripts import some of these helpers too, with
tests/ on sys.path.

Running atlas: ``runner`` (the one way: ``run_atlas``), ``cmdserver`` (a command server of
a test's own), ``writers``, ``memory``. Records and sites: ``site_records`` (records for
the site tests, readers of the built site), ``linksites`` (the one builder of MkDocs
sites). Git: ``git`` (the one way to run it, and a throwaway repository), ``gitteam`` (a
team on one remote; ``sync_racer`` is one clone's part in a race). Hostile input:
``hostile_repo``. The MCP server's clients: ``mcp_client``, ``oauth``, ``inspector``. Real
programs and machines: ``harness_tools``, ``scripted_model``, ``sessions`` (the real
harnesses against a scripted model), ``cdp`` and ``sitelayout`` (Chromium), ``moosefs``,
``exfat``, ``local_user`` (a second local user). ``fixtures``: the fixtures of the
harness and git tests.
"""
