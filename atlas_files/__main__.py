from __future__ import annotations

from atlas_files.cli import main

if __name__ == "__main__":
    main()
