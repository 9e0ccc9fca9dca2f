"""Path globs of a lease: what a glob covers, whether two meet, what is refused."""

from __future__ import annotations

import random
import re

import pytest

from atlas_files.facts.errors import BadInput
from atlas_files.protocol.leases.paths import (
    Index,
    check_glob,
    check_globs,
    covers,
    is_literal,
    normalize,
    overlaps,
)


@pytest.mark.parametrize(("glob", "path", "expected"), [
    # ** is any number of folders, none included
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**/*.py", "src/x/y/a.pyc", False),
    ("src/**/*.py", "lib/a.py", False),
    ("src/**/*.py", "srcx/a.py", False),
    ("**/metrics.py", "metrics.py", True),
    ("**/metrics.py", "a/b/metrics.py", True),
    ("**", "anything/at/all", True),
    # a single file, and nothing that merely starts like it
    ("src/metrics.py", "src/metrics.py", True),
    ("src/metrics.py", "src/metrics.pyc", False),
    ("src/metrics.py", "src/metrics", False),
    ("src/metrics.py", "lib/src/metrics.py", False),
    # a folder, with or without the slash, covers everything under it
    ("src", "src/a.py", True),
    ("src", "src/x/y/a.py", True),
    ("src/", "src/x/y/a.py", True),
    ("src", "srcx/a.py", False),
    ("src/**", "src/x/a.py", True),
    # * stays within one name (fnmatch's would cross the /), but a folder it matches counts
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/x/a.py", False),
    ("src/*", "src/x/a.py", True),
    ("*.md", "README.md", True),
    ("*.md", "docs/a.md", False),
    ("src/.*", "src/.env", True),  # dot files are ordinary names
    ("src/?.py", "src/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/[ab].py", "src/b.py", True),
    ("src/[!ab].py", "src/b.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[a-c]*.py", "src/beta.py", True),
    ("src/[.py", "src/[.py", True),  # an unclosed [ is an ordinary character
    ("src/a+b(1).py", "src/a+b(1).py", True),  # regex characters are not special
    ("Src/a.py", "src/a.py", False),  # case-sensitive, as git is
])
def test_what_a_glob_covers(glob: str, path: str, expected: bool) -> None:
    assert covers(check_glob(glob), path) is expected


@pytest.mark.parametrize(("text", "normal"), [
    ("./src/a.py", "src/a.py"),
    ("src//x/", "src/x"),
    ("src/./x", "src/x"),
    (".", "**"),
    ("a..b/c..", "a..b/c.."),  # dots inside a name are not a way out
])
def test_globs_are_normalized(text: str, normal: str) -> None:
    assert check_glob(text) == normal


@pytest.mark.parametrize(("text", "words"), [
    ("/etc/passwd", "absolute"),
    ("C:/repo/a.py", "absolute"),
    ("~/a.py", "absolute"),
    ("../other/a.py", "leads out of the repository"),
    ("src/../../a.py", "leads out of the repository"),
    ("src/..", "leads out of the repository"),
    ("src\\a.py", "backslash"),
    ("src/a\x1b[2J.py", "control character"),
    ("", "empty"),
    ("x" * 501, "over 500"),
    ("src/[z-a].py", "not a valid glob"),
])
def test_bad_globs_are_refused(text: str, words: str) -> None:
    with pytest.raises(BadInput) as caught:
        check_glob(text)
    assert words in caught.value.message
    assert caught.value.exit_code == 2
    assert "relative to the repository root" in (caught.value.hint or "")


def test_a_lease_holds_at_most_a_hundred_globs_and_duplicates_count_once() -> None:
    assert check_globs(["src/", "src", "./src", "lib"]) == ("src", "lib")
    check_globs([f"f{i}" for i in range(100)])
    with pytest.raises(BadInput, match="101 path globs"):
        check_globs([f"f{i}" for i in range(101)])


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("src/**", "src/metrics.py", True),
    ("src", "src/metrics.py", True),
    ("src/metrics.py", "src", True),
    ("src/*.py", "src/m*", True),
    ("src/**/*.py", "src/x/*.py", True),
    ("a/*/c", "a/b/*", True),
    ("src/[a-c].py", "src/[x-z].py", False),
    ("src/[a-m].py", "src/[k-z].py", True),
    ("src/[a-c].py", "src/[!a-c].py", False),
    ("src/[a-z].py", "src/[!ab].py", True),
    ("tests", "src", False),
    ("*.md", "docs/x.py", False),
    ("**/*.md", "docs", True),
])
def test_whether_two_globs_meet(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def test_asked_about_a_file_a_deep_glob_for_other_names_does_not_meet_it() -> None:
    # docs/x.py as a folder could hold a.md; as a file it does not.
    assert overlaps("**/*.md", "docs/x.py") is True
    assert overlaps("**/*.md", "docs/x.py", b_folder=False) is False
    assert overlaps("docs", "docs/x.py", b_folder=False) is True


NAMES = ["a", "b", "src", "x.py", "y.md", ".env", "ab"]
PIECES = ["a", "b", "src", "*", "?", "x.py", "*.py", "[ab]", "[!a]*", "**", "a*", ".*"]


def _random_path(rng: random.Random) -> str:
    return "/".join(rng.choice(NAMES) for _ in range(rng.randint(1, 4)))


def _random_glob(rng: random.Random) -> str:
    return "/".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))


def _reference(glob: str, path: str) -> bool:
    """An independent statement of the rule: some prefix of the path's segments matches
    the glob's segments, ** taking any number of whole segments."""
    def seg(pattern: str, name: str) -> bool:
        rx = ""
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "*":
                rx += ".*"
            elif c == "?":
                rx += "."
            elif c == "[":
                end = pattern.index("]", i + 2)
                body = pattern[i + 1:end]
                rx += "[^" + body[1:] + "]" if body[0] == "!" else "[" + body + "]"
                i = end
            else:
                rx += re.escape(c)
            i += 1
        return re.fullmatch(rx, name) is not None

    def match(g: list[str], p: list[str]) -> bool:
        if not g:
            return True  # what is left of the path lies under what matched
        if g[0] == "**":
            return any(match(g[1:], p[k:]) for k in range(len(p) + 1))
        return bool(p) and seg(g[0], p[0]) and match(g[1:], p[1:])

    return match(glob.split("/"), path.split("/"))


def test_matching_agrees_with_an_independent_statement_of_the_rule() -> None:
    rng = random.Random(14)
    for _ in range(3000):
        glob, path = check_glob(_random_glob(rng)), _random_path(rng)
        assert covers(glob, path) is _reference(glob, path), (glob, path)
        # for a plain path, "meets it as a file" is exactly "covers it"
        assert overlaps(glob, path, b_folder=False) is covers(glob, path), (glob, path)


def test_two_globs_meet_when_some_path_is_covered_by_both() -> None:
    rng = random.Random(41)
    paths = [_random_path(rng) for _ in range(400)]
    for _ in range(300):
        a, b = check_glob(_random_glob(rng)), check_glob(_random_glob(rng))
        witness = [p for p in paths if covers(a, p) and covers(b, p)]
        if witness:  # a shared path proves they meet; the converse needs no witness here
            assert overlaps(a, b), (a, b, witness[0])


def test_the_index_finds_what_covers_finds() -> None:
    rng = random.Random(7)
    globs = [check_glob(_random_glob(rng)) for _ in range(200)]
    globs += ["src", "src/x.py", "a/b", "**"]
    index = Index((g, n) for n, g in enumerate(globs))
    for _ in range(500):
        path = _random_path(rng)
        expected = [(g, n) for n, g in enumerate(globs) if covers(g, path)]
        assert sorted(index.covering(path), key=lambda gn: gn[1]) == expected, path


def test_literal_means_no_wildcard() -> None:
    assert is_literal("src/metrics.py") and not is_literal("src/*.py")
    assert not is_literal("src/[ab].py") and not is_literal("src/?.py")


def test_the_shortcut_for_normal_globs_agrees_with_the_long_way() -> None:
    rng = random.Random(3)
    alphabet = ["a", "b", ".", "..", "/", "//", "*", "**", "[", "]", "~", "\\", "C:", " ",
                "\n", "\x7f", "é", "-", "!"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        try:
            slow: str | None = normalize(text)
        except BadInput:
            slow = None
        try:
            fast: str | None = check_glob(text)
        except BadInput:
            fast = None
        assert fast == slow, text
        if slow is not None:
            assert check_glob(slow) == slow  # normal form is a fixed point
