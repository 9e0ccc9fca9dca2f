"""The MCP front end: the record's commands as tools of the Model Context Protocol, so
sessions without a shell or a file system (chat apps, desktop apps) read first and write
last like everyone else.

It sits beside the CLI and calls only :mod:`atlas_files.api`. The SDK (PyPI ``mcp``) is
imported here and in `atlas mcp` alone, so no other command pays for it.
"""
