"""`python -m atlas_files`: the same entry point as the `atlas` command."""

from __future__ import annotations

from atlas_files.launch import main

if __name__ == "__main__":
    main()
