"""How the guard opens the files it shares with other processes: the kernels' state files, the
incident log, the remembered batch sizes and their lock.

They live in folders others may write to (Jupyter's runtime folder, a shared home), so each is
opened as a regular file only: a link is not followed (one planted at the incident log's path
would have the guard append to the person's own file; one at a state file would serve the
server's token), and a FIFO or a device refuses at once instead of blocking whoever opens it.
A file the guard creates is its owner's alone (0600).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from pathlib import Path

#: Open without following a final link, and without waiting on a FIFO (none on Windows).
_SAFE = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class NotARegularFile(OSError):
    """The path is a link, a FIFO, a device or a folder: the guard does not use it."""


def open_regular(path: Path, flags: int) -> int:
    """``os.open`` for a regular file only, created 0600; ``NotARegularFile`` says why not."""
    try:
        handle = os.open(path, flags | _SAFE, 0o600)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: FreeBSD's word for a link
            raise NotARegularFile(error.errno, "a link, which the guard does not follow") from None
        if error.errno == errno.ENXIO:  # a FIFO that nobody reads, opened to write
            raise NotARegularFile(error.errno, "not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise NotARegularFile(errno.EINVAL, "not a regular file")
    if hasattr(os, "O_NONBLOCK"):
        os.set_blocking(handle, True)  # a regular file: reads and writes as usual
    return handle


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes; ``None`` when it does not exist;
    ``NotARegularFile`` or ``ValueError`` (too large) when it cannot be used."""
    try:
        handle = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(handle, "rb") as file:
        if os.fstat(file.fileno()).st_size > limit:
            raise ValueError(f"it holds more than {limit} bytes")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"it holds more than {limit} bytes")
    return data


def readable_by_others(handle: int) -> bool:
    """Whether the open file's group or others may read it."""
    return bool(os.fstat(handle).st_mode & (stat.S_IRGRP | stat.S_IROTH))


def os_reason(error: OSError) -> str:
    """An ``OSError`` in words, without the path it names (a refusal sent to a client)."""
    return error.strerror or type(error).__name__


#: How often a replace refused by Windows is tried again, and the pause between tries.
REPLACE_ATTEMPTS = 5
REPLACE_PAUSE_S = 0.05


def replace_atomically(temporary: str, path: Path) -> None:
    """Move the written ``temporary`` file over ``path``; the temporary never stays behind.

    On Windows a replace fails (``PermissionError``) while another process has ``path`` open,
    as the server has a kernel's state file while it reads it, for the moment of a read: the
    replace is tried again a few times. Anything else, or a refusal that lasts, is raised.
    """
    try:
        for attempt in range(REPLACE_ATTEMPTS):
            try:
                os.replace(temporary, path)
                return
            except PermissionError:
                if attempt == REPLACE_ATTEMPTS - 1:
                    raise
                time.sleep(REPLACE_PAUSE_S)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
