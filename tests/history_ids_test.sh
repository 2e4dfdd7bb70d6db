#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: the demonstration history's ids do not depend on the machine: a tiny source
# tarball (a file, an executable, a symlink) through scripts/vm/kernel-import and a
# two-patch series through scripts/vm/kernel-history, twice: once in umask 022, once in
# umask 077 with a hostile ~/.gitconfig (core.autocrlf, am.messageid, user.name,
# apply.whitespace=fix) and GIT_AUTHOR_*/GIT_COMMITTER_* in the environment. The base,
# each commit and each tag object must have the same id both times.
#   tests/history_ids_test.sh SOURCE_DIR
set -u
src=${1:?usage: history_ids_test.sh SOURCE_DIR}
. "$(dirname "$0")/checks.sh"
tmp=$(mktemp -d /tmp/krepro-hidtest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/src/linux-6.1/scripts" "$tmp/patches" "$tmp/home"
cd "$tmp/src" || exit 1
printf 'hello\r\n' >linux-6.1/crlf.txt
printf 'int x;\n' >linux-6.1/a.c
printf '#!/bin/sh\necho hi\n' >linux-6.1/scripts/run.sh && chmod 755 linux-6.1/scripts/run.sh
ln -s a.c linux-6.1/link.c
tar -cJf "$tmp/linux-source-6.1.tar.xz" linux-6.1
# two patches, as git format-patch writes them (trailing whitespace in the second)
cat >"$tmp/patches/one.patch" <<'EOF'
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Date: Mon, 23 Nov 2026 16:55:06 +0000
Subject: [PATCH] a: one

---
 a.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/a.c b/a.c
--- a/a.c
+++ b/a.c
@@ -1 +1,2 @@
 int x;
+int y;
-- 
2.39.5

EOF
cat >"$tmp/patches/two.patch" <<'EOF'
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: krepro <krepro@localhost>
Date: Mon, 23 Nov 2026 17:00:00 +0000
Subject: [PATCH] a: two

---
 a.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/a.c b/a.c
--- a/a.c
+++ b/a.c
@@ -1,2 +1,3 @@
 int x;
 int y;
+int z; 
-- 
2.39.5

EOF
printf '# test\none.patch t-one\ntwo.patch t-two t-also\n' >"$tmp/patches/series"
cat >"$tmp/home/.gitconfig" <<'EOF'
[user]
	name = Someone Else
	email = else@example.org
[core]
	autocrlf = true
	fileMode = false
[am]
	messageid = true
	keepcr = true
[apply]
	whitespace = fix
EOF
ids() { # DIR: the ids of base, each commit, each tag object
	git -C "$1" rev-parse base bisect bisect~1 t-one t-two t-also
}
one() { # NAME UMASK [hostile]
	(
		umask "$2"
		if [ -n "${3:-}" ]; then
			export HOME="$tmp/home" GIT_AUTHOR_NAME=Env GIT_AUTHOR_EMAIL=env@x GIT_COMMITTER_NAME=Env \
				GIT_COMMITTER_EMAIL=env@x GIT_AUTHOR_DATE="2030-01-01T00:00:00+0000" \
				GIT_COMMITTER_DATE="2030-01-01T00:00:00+0000"
		fi
		"$src/scripts/vm/kernel-import" "$tmp/linux-source-6.1.tar.xz" 6.1.192-3 "$tmp/$1" >/dev/null &&
			KREPRO_HISTORY_PATCHES="$tmp/patches" "$src/scripts/vm/kernel-history" "$tmp/$1" 2>/dev/null
	) || { bad "$1: import or history failed"; return 1; }
}
one plain 022 && one hostile 077 hostile || { finish; exit; }
a=$(ids "$tmp/plain") b=$(ids "$tmp/hostile")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "the same ids in umask 022 and in 077 with a hostile config" ||
	bad "ids differ: $(echo "$a" | tr '\n' ' ') / $(echo "$b" | tr '\n' ' ')"
[ "$(git -C "$tmp/plain" ls-tree base scripts/run.sh | cut -c1-6)" = 100755 ] &&
	[ "$(git -C "$tmp/plain" ls-tree base link.c | cut -c1-6)" = 120000 ] &&
	git -C "$tmp/plain" cat-file blob base:crlf.txt | grep -q "$(printf '\r')" &&
	ok "the executable, the symlink and a CRLF kept as they are" || bad "modes or bytes changed"
[ "$(git -C "$tmp/plain" log -1 --format='%an %cn %ad' --date=iso bisect~1)" = \
	"A Developer krepro 2026-11-23 16:55:06 +0000" ] && ok "the patch's author and date, krepro commits" ||
	bad "author: $(git -C "$tmp/plain" log -1 --format='%an %cn %ad' --date=iso bisect~1)"
finish
