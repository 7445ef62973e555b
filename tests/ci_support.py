"""What a test does when a real part it needs is missing (Chromium, node, the real logs, ...):
it skips on a developer's machine, and fails under ``CI=true``, where a test that did not run
proved nothing."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def cannot_run(reason: str) -> None:
    """Skip, or under CI=true fail, saying why the test cannot run."""
    if in_ci():
        pytest.fail(f"CI=true: the test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def tmpfs(folder: Path, size: str = "64k", *, read_only: bool = False, full: bool = False) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted on ``folder`` (made), unmounted after: ``read_only`` (a folder that
    cannot be written), or ``full`` (filled to the last byte; the filler is ``folder/filler``). Needs root and
    mount: ``cannot_run`` says why otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        cannot_run("a real read-only or full disk needs a tmpfs mounted as root: run the test as root (a container, CI)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        cannot_run(f"mount -t tmpfs is not allowed here ({done.stderr.strip() or done.returncode}): "
                   "a container needs CAP_SYS_ADMIN for a real read-only or full disk")
    try:
        if full:
            with open(folder / "filler", "wb", buffering=0) as f:
                for chunk in (4096, 1):
                    try:
                        while True:
                            f.write(b"\0" * chunk)
                    except OSError as err:
                        assert err.errno == errno.ENOSPC, err
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
