"""A body over the record's body_limit is refused while it is read, never read whole.

The real `atlas` runs in a child whose address space is capped well below what reading
the input whole would take: `-f /dev/zero`, stdin from /dev/zero, stdin from a pipe that
never ends, and a sparse file of 64 GiB. Each is refused within seconds, exit 2, with the
limit in the message and nothing written; a body of exactly the limit is written, one
byte more is not.
"""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.runner import atlas_command, child_env

from atlas_files.facts.errors import BadInput
from atlas_files.storage import bodies
from atlas_files.storage.record import Record

# Python, click, YAML and the record's modules fit in a fraction of this; reading one
# gigabyte, let alone /dev/zero, does not.
ADDRESS_SPACE = 768 << 20
TIME_BOUND_S = 30.0  # for the whole child, on a loaded machine; the refusal itself is ms
SPARSE_SIZE = 64 << 30
LIMIT = 1 << 20  # the default body_limit


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _atlas(record: Path, *args: str, stdin: int | None = None,
           input: bytes | None = None) -> tuple[subprocess.CompletedProcess[bytes], float]:
    env = child_env()
    start = time.monotonic()
    done = subprocess.run(atlas_command("--record", str(record), "--as", "ann",
                                        *args), stdin=stdin, input=input,
                          capture_output=True, env=env, timeout=TIME_BOUND_S * 2,
                          preexec_fn=_capped)
    return done, time.monotonic() - start


def _written(record: Record) -> list[Path]:
    return sorted(p for p in (record.root / "projects").rglob("*.md"))


def _assert_refused(done: subprocess.CompletedProcess[bytes], seconds: float,
                    record: Record, limit: int = LIMIT, before: tuple[Path, ...] = ()) -> None:
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"body_limit is {limit} bytes" in err, err
    assert "nothing was written" in err, err
    assert "Traceback" not in err and "MemoryError" not in err, err
    assert seconds < TIME_BOUND_S, seconds
    assert _written(record) == list(before)


@pytest.fixture
def record(tmp_path: Path) -> Record:
    return Record.init(tmp_path / "rec")


@pytest.mark.parametrize("command", [["put", "zeros"], ["status", "write"], ["end"]])
def test_a_body_from_dev_zero_is_refused_at_the_limit(record: Record,
                                                       command: list[str]) -> None:
    done, seconds = _atlas(record.root, *command, "-f", "/dev/zero")
    _assert_refused(done, seconds, record)


def test_stdin_from_dev_zero_is_refused_at_the_limit(record: Record) -> None:
    with open("/dev/zero", "rb") as zero:
        done, seconds = _atlas(record.root, "put", "zeros", "-f", "-", stdin=zero.fileno())
    _assert_refused(done, seconds, record)


def test_a_pipe_that_never_ends_is_refused_at_the_limit(record: Record) -> None:
    """`yes | atlas put x`: the writer stops reading just past the limit and leaves."""
    env = child_env()
    yes = subprocess.Popen(["yes", "a line of an endless body"], stdout=subprocess.PIPE)
    try:
        assert yes.stdout is not None
        start = time.monotonic()
        done = subprocess.run(atlas_command("--record", str(record.root), "--as", "ann", "put",
                                            "endless"),
                              stdin=yes.stdout, capture_output=True, env=env,
                              timeout=TIME_BOUND_S * 2, preexec_fn=_capped)
        seconds = time.monotonic() - start
    finally:
        yes.kill()
        yes.wait()
    _assert_refused(done, seconds, record)


def test_a_huge_sparse_file_is_refused_by_its_size_without_reading_it(
        record: Record, tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.md"
    with open(sparse, "wb") as fh:
        fh.truncate(SPARSE_SIZE)
    done, seconds = _atlas(record.root, "put", "sparse", "-f", str(sparse))
    _assert_refused(done, seconds, record)
    assert f"is {SPARSE_SIZE} bytes" in done.stderr.decode()


def test_a_body_of_exactly_the_limit_is_written_and_one_byte_more_is_not(
        tmp_path: Path) -> None:
    record = Record.init(tmp_path / "rec")
    record.update_config(lambda data: {**data, "body_limit": 1000})
    body = b"x" * 999 + b"\n"
    done, _ = _atlas(record.root, "put", "exact", "-f", "-", input=body)
    assert done.returncode == 0, done.stderr
    assert (record.root / "projects/main/artifacts/exact/exact.v0001.md").read_bytes() \
        .endswith(body)
    before = tuple(_written(record))
    over = tmp_path / "over.md"
    over.write_bytes(body + b"y")
    done, seconds = _atlas(record.root, "put", "over", "-f", str(over))
    _assert_refused(done, seconds, record, limit=1000, before=before)
    assert "is 1001 bytes" in done.stderr.decode()
    done, seconds = _atlas(record.root, "put", "over", "-f", "-", input=body + b"y")
    assert done.returncode == 2 and "body_limit is 1000 bytes" in done.stderr.decode()


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 300), max_size=40), limit=st.integers(0, 2000))
def test_a_body_arriving_in_chunks_is_taken_no_further_than_the_limit(
        sizes: list[int], limit: int) -> None:
    """The helper for bodies that arrive in parts (an HTTP request's): it joins them while
    they fit, and stops at the chunk that passes the limit without asking for another."""
    taken: list[int] = []

    def chunks() -> Iterator[bytes]:
        for i, size in enumerate(sizes):
            taken.append(i)
            yield b"z" * size

    total = sum(sizes)
    if total <= limit:
        assert bodies.collect(chunks(), limit, "the request") == b"z" * total
        return
    with pytest.raises(BadInput) as refused:
        bodies.collect(chunks(), limit, "the request")
    assert f"body_limit is {limit} bytes" in refused.value.message
    running, passing = 0, 0
    for i, size in enumerate(sizes):
        running += size
        if running > limit:
            passing = i
            break
    assert taken == list(range(passing + 1))
