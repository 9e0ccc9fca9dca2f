"""Output schemas: the JSON documents `atlas ... --json` prints, as each tool declares them.

The SDK's client checks every result against its tool's schema, so a schema that is wrong
fails loudly in the tests of each tool. They name the top-level keys and their types only:
the whole tools/list must stay small (peers load 10,000 to 25,000 tokens of tool
definitions before any work; this server's list is measured by a test).
"""

from __future__ import annotations

from typing import Any

_TYPES = {"s": "string", "i": "integer", "n": "number", "b": "boolean", "a": "array",
          "o": "object"}


def shape(keys: str, more: str = "") -> dict[str, Any]:
    """A JSON schema for an object from ``"name:s version:i retracted:o?"``: each word is a
    key and its type (s string, i integer, n number, b boolean, a array, o object; ``?``
    also allows null). ``keys``: those every answer of the tool has; ``more``: those some
    answers have. Every key is a property and none is listed as required: a ``required``
    list would name each key a second time, in every tool, and the keys' presence is the
    tool's tests' to hold to the CLI's documents (tests/mcp/test_mcp_json.py)."""
    props: dict[str, Any] = {}
    for word in f"{keys} {more}".split():
        key, _, code = word.partition(":")
        kind = {"type": _TYPES[code.rstrip("?")]}
        # anyOf rather than a list of types: clients that map schemas onto one-type
        # dialects (the MCP Inspector's portability check names them) read it.
        props[key] = {"anyOf": [kind, {"type": "null"}]} if code.endswith("?") else kind
    return {"type": "object", "properties": props}


_VERSION = ("name:s version:i author:s? written_at:s? based_on:i? summary:s body:s "
            "corrected_by:a retracted:o?")
_VERSION_MORE = "proposal:b links:a digest_ok:b? retractions:a accepted_by:s?"
# A lease's keys scripts rely on; the rest of a lease row (last_holder, ended, read_at,
# ...) is in the document too, undeclared, to keep the list small.
_LEASE = "resource:s generation:i state:s holder:s? why:s? expires_at:s? expires_in_s:n?"

WRITTEN = shape("name:s version:i path:s", "warnings:a")
STATUS = shape(_VERSION, f"project:s {_VERSION_MORE}")
TOPIC = shape(f"{_VERSION} {_VERSION_MORE}")
FEED = shape("as:s? new:a marked_read:b")
LEASE = shape("", f"{_LEASE} action:s? advisory:s history:a leases:a unleased_busy:a "
              "problems:a limits:s machines:a changed:o")
# The keys the design fixes; the rest of a decision (links, accepts, corrected_by, ...) is
# in the document too, undeclared, so that every tool fits the list's size budget.
DECISION = shape("id:s at:s topic:s recommended:s chosen:s relation:s why:s author:s")
TOPICS = shape("", "project:s topics:a unreadable:a name:s versions:a from:i to:i diff:s")
DECISIONS = shape("project:s decisions:a unreadable:a")
# A task's keys are in docs/tasks.md; declared here only what tells the answers apart.
TASK = shape("", "state:s tasks:a task:o?")
CORRECTION = shape("id:s kind:s at:s author:s project:s ref:s path:s digest_ok:b?",
                   "what:s why:s retractions:a")
CHECK = shape("ok:b findings:a fixed:a files:i")
SEARCH = shape("query:s results:a")
