"""A real volume that refuses hard links: exFAT, mounted through FUSE from a loop device.

exFAT has no hard links (link(2) fails with EPERM), folds case, and its FUSE driver
renames by removing the old name first: what `atlas doctor` must call unsafe. The image
is a file in the test's temp folder; the loop device, the mount and the driver's process
(kept in the foreground with -d, so its pid is ours) are undone on exit, by pid.
``unavailable()`` says why it cannot run here; ATLAS_REQUIRE_EXFAT (CI) makes that a
failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

REQUIRE_ENV = "ATLAS_REQUIRE_EXFAT"
BINARIES = ("mkfs.exfat", "mount.exfat-fuse", "losetup", "umount")


def unavailable() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "an exFAT mount needs root (a loop device, a FUSE mount)"
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install exfat-fuse exfatprogs)"
    if not os.path.exists("/dev/fuse") or not os.path.exists("/dev/loop-control"):
        return "/dev/fuse or /dev/loop-control is missing: no FUSE mount of a loop device"
    return None


@contextlib.contextmanager
def exfat(base: Path, size_mib: int = 32) -> Iterator[Path]:
    """An empty exFAT volume mounted at ``base``/mnt for the length of the block."""
    base.mkdir(parents=True, exist_ok=True)
    image, mount = base / "exfat.img", base / "mnt"
    with open(image, "wb") as fh:
        fh.truncate(size_mib << 20)
    subprocess.run(["mkfs.exfat", str(image)], check=True, capture_output=True)
    loop = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                          capture_output=True, text=True).stdout.strip()
    driver: subprocess.Popen[bytes] | None = None
    try:
        mount.mkdir()
        with open(base / "driver.log", "wb") as log:
            driver = subprocess.Popen(["mount.exfat-fuse", "-d", loop, str(mount)],
                                      stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.ismount(mount):
            if driver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("exFAT was not mounted: "
                                   + (base / "driver.log").read_text(errors="replace")[-400:])
            time.sleep(0.05)
        yield mount
    finally:
        if os.path.ismount(mount) and subprocess.run(
                ["umount", str(mount)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
        if driver is not None:
            try:
                driver.wait(timeout=20)  # it exits once unmounted
            except subprocess.TimeoutExpired:
                driver.kill()
                driver.wait()
        subprocess.run(["losetup", "-d", loop], capture_output=True)
