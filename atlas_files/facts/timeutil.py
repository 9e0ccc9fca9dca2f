"""Times (UTC, RFC 3339), durations (``45s``, ``90m``, ``1h30m``) and human ages."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from atlas_files.facts.errors import BadInput

_DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def now() -> datetime:
    return datetime.now(UTC)


def format_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 time; naive times are taken as UTC."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    t = datetime.fromisoformat(value)
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t


def parse_duration(text: str) -> float:
    """Seconds in ``45s``, ``90m``, ``2h``, ``1h30m`` (and ``1d``)."""
    value = str(text).strip().lower()
    m = _DURATION_RE.match(value)
    if not value or not m or not any(m.groups()):
        raise BadInput(
            f"bad duration {text!r}", hint="write it like 45s, 90m, 2h or 1h30m"
        )
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    try:
        return float(((d * 24 + h) * 60 + mi) * 60 + s)
    except OverflowError:
        raise BadInput(f"the duration {str(text)[:40]!r} is too long",
                       hint="write it like 45s, 90m, 2h or 1h30m") from None


def format_duration(seconds: float) -> str:
    seconds = int(round(abs(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{s:02d}s" if s and minutes < 10 else f"{minutes}m"
    hours, mi = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{mi:02d}m" if mi else f"{hours}h"
    return f"{hours // 24}d"


def age_text(then: datetime, at: datetime | None = None) -> str:
    """'just now', '5 minutes ago', '31 days ago' (or 'in 3 minutes' for a future time)."""
    delta = ((at or now()) - then).total_seconds()
    future = delta < 0
    seconds = abs(delta)
    if seconds < 10:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            n = int(seconds // size)
            words = f"{n} {unit}{'' if n == 1 else 's'}"
            return f"in {words}" if future else f"{words} ago"
    return "just now"


# The times parse_time gave for the texts listings show again and again (each version's
# written_at): a listing of ten thousand topics parses each at every run otherwise. Parsing
# is a function of the text alone, so what is kept never changes an answer.
_PARSED: dict[str, datetime] = {}
_PARSED_MAX = 200_000


def parsed(text: str) -> datetime:
    """``parse_time(text)``, remembered for the life of the process."""
    then = _PARSED.get(text)
    if then is None:
        then = parse_time(text)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = then
    return then


def age_of(written_at: str, at: datetime | None = None) -> str:
    """``age_text`` of an RFC 3339 string (at ``at``, by default now); the string itself
    if it is not a time."""
    try:
        return age_text(parsed(written_at), at)
    except (ValueError, TypeError, OverflowError):
        return f"at {written_at}"
