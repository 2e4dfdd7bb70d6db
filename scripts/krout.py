# SPDX-License-Identifier: GPL-2.0-only
"""Description: the output directory a script writes as root (--out DIR): a new directory
of its own, or an empty one of the caller's that nobody else can write; every file in it
new, never through a link, never over a file (issue 42: a draft was replaced, a link's
target overwritten)."""
import os
import stat


class Exists(Exception):
    pass


def make_out(out, what="--out"):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    try:
        os.mkdir(out, 0o755)
        return
    except FileExistsError:
        pass
    st = os.lstat(out)
    if not stat.S_ISDIR(st.st_mode) or os.listdir(out) or st.st_uid != os.geteuid() or \
            st.st_mode & 0o022:
        raise Exists(f"{what} {out}: exists; the output goes into a new directory (or an "
                     "empty one of yours)")


def write_new(out, name, data):
    """a new file in out (make_out's); data str or bytes"""
    fd = os.open(os.path.join(out, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                 os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
