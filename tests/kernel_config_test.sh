#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: scripts/vm/kernel-config on the cache's 6.1 tree (scripts/vm/build-kernels)
# and on a copy shaped like 5.4-5.9: kvm_guest.config under arch/x86/configs/ and no
# CPU_IDLE_GOV_HALTPOLL (that came in 5.4; its absence stands for any option older trees
# lack). Checks: the user's .config is never changed (the result goes to a copy), the
# fragment holds, an option the tree does not know is named and ignored, -o onto the base
# is refused. No build, no boot: kconfig only.
#   tests/kernel_config_test.sh SOURCE_DIR        (needs the tree; else 77)
set -u
src=${1:?usage: kernel_config_test.sh SOURCE_DIR}
repo=${KREPRO_CACHE:-/var/cache/krepro}/src/linux-6.1
kc=$src/scripts/vm/kernel-config
git -C "$repo" rev-parse -q --verify base >/dev/null 2>&1 ||
	{ echo "SKIP: no kernel tree $repo (scripts/vm/build-kernels)"; exit 77; }
. "$(dirname "$0")/checks.sh"
tmp=$(mktemp -d /tmp/krepro-kconfig-test.XXXXXX)
wt=$tmp/tree
cleanup() { git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
git -C "$repo" worktree add -q --detach "$wt" base || { bad "worktree"; exit 1; }

# a user's own .config: kept as it is, the result in .config.krepro
printf '# my own config\nCONFIG_64BIT=y\nCONFIG_SMP=y\n' >"$wt/.config"
before=$(sha256sum "$wt/.config")
out=$("$kc" "$wt" 2>"$tmp/err")
rc=$?
[ "$rc" = 0 ] && ok "from the user's .config: exit 0" || { bad "exit $rc: $(cat "$tmp/err")"; }
[ "$(sha256sum "$wt/.config")" = "$before" ] && ok "the user's .config is unchanged" ||
	bad "the user's .config was changed"
[ "$out" = "$wt/.config.krepro" ] && ok "result: $out" || bad "result printed: '$out'"
grep -qx 'CONFIG_LOCALVERSION="-krepro"' "$wt/.config.krepro" 2>/dev/null && grep -qx 'CONFIG_KVM_GUEST=y' "$wt/.config.krepro" &&
	ok "the fragment and kvm_guest.config are in the result" || bad "the result lacks the fragments"

# -o onto the base config: refused
"$kc" --base "$wt/.config" -o "$wt/.config" "$wt" >/dev/null 2>&1
rc=$?
[ "$rc" = 128 ] && ok "-o onto the base: 128" || bad "-o onto the base: exit $rc"

# shaped like 5.4-5.9
mkdir -p "$wt/arch/x86/configs"
git -C "$wt" mv kernel/configs/kvm_guest.config arch/x86/configs/kvm_guest.config
sed -i '/^config CPU_IDLE_GOV_HALTPOLL$/,/^$/d' "$wt/drivers/cpuidle/Kconfig"
grep -q 'CPU_IDLE_GOV_HALTPOLL$' "$wt/drivers/cpuidle/Kconfig" && bad "could not take the option out"
rm -f "$wt/.config" "$wt/.config.krepro"
out=$("$kc" --defconfig -o "$tmp/old.config" "$wt" 2>"$tmp/err")
rc=$?
[ "$rc" = 0 ] && ok "a 5.4-shaped tree: exit 0" || bad "a 5.4-shaped tree: exit $rc: $(cat "$tmp/err")"
grep -q "arch/x86/configs/kvm_guest.config" "$tmp/err" && ok "kvm_guest.config found under arch/x86/configs" ||
	bad "which kvm_guest.config: $(cat "$tmp/err")"
grep -q "not in this kernel.*CPU_IDLE_GOV_HALTPOLL" "$tmp/err" && ok "the option it lacks is named" ||
	bad "the missing option is not named: $(cat "$tmp/err")"
grep -qx 'CONFIG_KVM_GUEST=y' "$tmp/old.config" 2>/dev/null && ok "kvm_guest.config merged" || bad "no CONFIG_KVM_GUEST=y"
[ ! -e "$wt/.config" ] && ok "no .config written into the tree with -o" || bad "a .config appeared in the tree"
finish
