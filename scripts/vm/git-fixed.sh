# SPDX-License-Identifier: GPL-2.0-only
# Sourced by scripts/vm/kernel-import and kernel-history: git as the same person at the same
# time on every machine, whatever the user's config and environment say, so that the
# demonstration history has the same commit and tag ids everywhere.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=krepro GIT_AUTHOR_EMAIL=krepro@localhost
export GIT_COMMITTER_NAME=krepro GIT_COMMITTER_EMAIL=krepro@localhost
export GIT_AUTHOR_DATE="2026-11-23T12:00:00+0000" GIT_COMMITTER_DATE="2026-11-23T12:00:00+0000"
unset GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
	GIT_DEFAULT_HASH EMAIL 2>/dev/null || true
