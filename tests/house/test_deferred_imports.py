"""Every import deferred into a function says why it is not at the top of its module."""

from __future__ import annotations

import re

from atlas_files import layers

# The noqa comment for PLC0415 (other codes beside it allowed), then a dash and the reason.
REASON = re.compile(r"# noqa: [A-Z0-9, ]*PLC0415[A-Z0-9, ]*\s+-\s+\S")


def test_each_deferred_import_says_why() -> None:
    silent = []
    for module, path in layers.modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in layers.deferred_imports(path):
            text = "\n".join(lines[node.lineno - 1:node.end_lineno])
            if not REASON.search(text):
                silent.append(f"{module}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, ("an import inside a function costs a look-up at each call and hides "
                        "what the module needs: move it to the top, or end its line with "
                        "`# noqa: PLC0415 - why` (bench/bench_deferred.py says whether it "
                        "pays):\n" + "\n".join(silent))
