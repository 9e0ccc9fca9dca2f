"""Child processes that write a record until they are killed, for the crash tests."""

KILLED_WRITER = r"""
import sys
from atlas_files.storage.record import Record
from atlas_files.protocol import artifacts
from atlas_files.facts.errors import VersionConflict
root, who = sys.argv[1], sys.argv[2]
record = Record(root)
n = 0
while True:
    try:
        artifacts.get(record, "plan", reader=who)
    except Exception:
        pass
    try:
        artifacts.put(record, "plan", (f"{who} {n} " * 2000) + "\n", author=who)
    except VersionConflict:
        pass
    n += 1
"""
