"""What the generator keeps between builds, so that a rebuild costs what changed.

``SiteCache``, rendered bodies and diffs: versions never change, so Python-Markdown's
output for a body and the diff of two bodies are keyed by a digest of what they were made
from, and kept in ``<out>/.atlas-cache/bodies-XX.json`` (256 shards). What is kept is made *before*
escaping and sanitising: whatever the cache holds (even a hand-edited cache) still goes
through nh3, the link rewriting and the escaping on every build.

``TopicCache``, one memo per topic page in ``<out>/.atlas-cache/topics.json``: a topic
whose version files, marks and body links are as they were at the last build keeps its
page as it is, unread and unwritten, so that a rebuild after one new version reads one
topic. (Pages carry no build time and no age for the same reason: an engine rebuilds only
the pages that changed, see ``fragments.when``.)

Both files are read and written through ``files.Writer``, so never through a symlink.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import markdown

if TYPE_CHECKING:
    from atlas_files.sitegen.files import Writer

CACHE_DIR = ".atlas-cache"
CACHE_FILE = "bodies-{shard}.json"
FORMAT = 2
# Keys are hex digests; their last two digits pick the shard. A rebuild after one new
# version reads and writes the few shards its new bodies and diffs fall in, not a file
# that holds every body of the record (tens of megabytes at 10,000 topics).
_SHARD_DIGITS = 2


def _stamp() -> str:
    # A new Python-Markdown may render the same text differently.
    return f"{FORMAT}/markdown-{markdown.__version__}"


class SiteCache(MutableMapping[str, str]):
    """Rendered bodies and diffs by key, in shards read when first asked for; ``save``
    rewrites the shards that changed, keeping of each only the entries this build used
    (or kept, see ``keep``)."""

    def __init__(self, folder: Writer | None) -> None:
        self.folder = folder  # the cache's folder, written without following symlinks
        self.used: set[str] = set()
        # Set while one topic's page is made: the keys it used, kept in its memo so that a
        # build which keeps the page without making it still keeps what it was made from.
        self.touched: list[str] | None = None
        self._shards: dict[str, dict[str, str]] = {}
        self._loaded: dict[str, int] = {}  # shard -> entries read from its file
        self._dirty: set[str] = set()

    def _shard(self, key: str) -> dict[str, str]:
        name = key[-_SHARD_DIGITS:]
        shard = self._shards.get(name)
        if shard is None:
            shard = self._shards[name] = self._read(name)
            self._loaded[name] = len(shard)
        return shard

    def _read(self, name: str) -> dict[str, str]:
        raw = self.folder.read(CACHE_FILE.format(shard=name)) if self.folder else None
        try:
            data = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            return {}
        if isinstance(data, dict) and data.get("stamp") == _stamp() and isinstance(
                data.get("bodies"), dict):
            return {str(k): str(v) for k, v in data["bodies"].items()}
        return {}

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.used.add(key)
        if self.touched is not None:
            self.touched.append(key)
        return self._shard(key).get(key, default)

    def __getitem__(self, key: str) -> str:
        return self._shard(key)[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.used.add(key)
        self._shard(key)[key] = value
        self._dirty.add(key[-_SHARD_DIGITS:])

    def __delitem__(self, key: str) -> None:
        del self._shard(key)[key]
        self._dirty.add(key[-_SHARD_DIGITS:])

    def __iter__(self) -> Iterator[str]:
        return (k for shard in self._shards.values() for k in shard)

    def __len__(self) -> int:
        return sum(len(shard) for shard in self._shards.values())

    def keep(self, keys: tuple[str, ...]) -> None:
        """Keep ``keys`` though this build did not use them (their page was kept)."""
        self.used.update(keys)

    def save(self) -> None:
        if self.folder is None:
            return
        for name, shard in sorted(self._shards.items()):
            keep = {k: shard[k] for k in sorted(shard) if k in self.used}
            if name not in self._dirty and len(keep) == self._loaded[name]:
                continue  # nothing new and nothing dropped
            self.folder.replace(CACHE_FILE.format(shard=name), json.dumps(
                {"stamp": _stamp(), "bodies": keep}, separators=(",", ":")).encode("utf-8"))


TOPICS_FILE = "topics.json"
TOPICS_FORMAT = 1


@dataclass(frozen=True)
class TopicMemo:
    """What a topic's page was made from and what it gave the other pages, so that a
    rebuild skips a topic whose files did not change: no version is read, no body
    rendered, no page compared."""

    key: str  # a digest of the version files' stat and of the marks on its versions
    page: tuple[int, int]  # (size, mtime_ns) of the page as written
    links: tuple[tuple[str, str | None], ...]  # each body link target -> where it led
    latest: dict[str, Any]  # the latest version's front matter (its body is not kept)
    older: tuple[str, ...]  # "v2 corrected", ...
    versions: tuple[tuple[int, str, str], ...]  # (version, written_at, author), oldest first
    bodies: tuple[str, ...] = ()  # the SiteCache keys its page was made from

    def to_json(self) -> list[Any]:
        return [self.key, list(self.page), [list(x) for x in self.links], self.latest,
                list(self.older), [list(v) for v in self.versions], list(self.bodies)]

    @classmethod
    def from_json(cls, raw: Any) -> TopicMemo:
        key, page, links, latest, older, versions, bodies = raw
        return cls(str(key), (int(page[0]), int(page[1])),
                   tuple((str(t), None if u is None else str(u)) for t, u in links),
                   dict(latest), tuple(str(o) for o in older),
                   tuple((int(n), str(at), str(who)) for n, at, who in versions),
                   tuple(str(b) for b in bodies))


class TopicCache:
    """Topic memos of the last build, by ``project/topic``; ``save`` keeps those put or
    used by this one. A memo is only a shortcut: the page it stands for is kept only if
    the page file is still the one written, and whatever the cache holds that cannot be
    read as a memo is dropped, never trusted."""

    def __init__(self, folder: Writer | None, stamp: str) -> None:
        self.folder = folder
        self.stamp = stamp  # what every page also depends on (see ``topics.stamp``)
        self.memos: dict[str, TopicMemo] = {}
        self.kept: dict[str, TopicMemo] = {}
        self.changed = False
        raw = folder.read(TOPICS_FILE) if folder is not None else None
        try:
            data = json.loads(raw) if raw is not None else None
            if isinstance(data, dict) and data.get("stamp") == stamp:
                self.memos = {str(k): TopicMemo.from_json(v)
                              for k, v in data["topics"].items()}
        except (ValueError, TypeError, KeyError, IndexError, RecursionError, AttributeError):
            self.memos = {}

    def get(self, name: str, key: str) -> TopicMemo | None:
        memo = self.memos.get(name)
        return memo if memo is not None and memo.key == key else None

    def keep(self, name: str, memo: TopicMemo) -> None:
        self.kept[name] = memo
        if self.memos.get(name) is not memo:
            self.changed = True

    def save(self) -> None:
        if self.folder is None or (not self.changed and len(self.kept) == len(self.memos)):
            return
        data = {"stamp": self.stamp,
                "topics": {k: m.to_json() for k, m in sorted(self.kept.items())}}
        self.folder.replace(TOPICS_FILE, json.dumps(data, separators=(",", ":"))
                            .encode("utf-8"))
