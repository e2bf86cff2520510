#!/usr/bin/env bash
# host-tests.sh MANDIR: the man pages built into MANDIR (make man), TAP on
# stdout.  Each page renders without a groff warning; aheadfs(5) names every
# mount option and prefetch mode of kmod/super.c, every module parameter
# (the source's, and the built module's through modinfo, each with its
# description), every sysfs file and statistic of kmod/sysfs.c; aheadctl(8)
# and aheadtrace(8) name every verb and long option of their --help.  The
# shipped modprobe.d file lists every parameter at modinfo's default, and
# make install-man install-modprobe-conf put the files where they belong.
# Exit status 1 if any test failed.
set -u
man=${1:?usage: host-tests.sh MANDIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d /tmp/aheadfs-man-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pages="aheadfs.5 aheadctl.8 aheadtrace.8"

n=0 failed=0
echo "TAP version 13"
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() {
	n=$((n + 1)) failed=1
	echo "not ok $n $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | head -n 30 | sed 's/^/# /'
	return 0
}
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }

# text PAGE: the page as plain text, one line per paragraph (no line
# breaks, hence no hyphenation), for word searches.
text() { groff -t -man -Tutf8 -P-cbou -rLL=2000n -rcR=1 "$man/$1" 2>/dev/null; }
# missing TEXTFILE NAME...: the NAMEs that are not a word of TEXTFILE.
missing() {
	local f=$1 w out=
	shift
	for w in "$@"; do
		grep -qF -- "$w" "$f" && grep -qE -- "(^|[^a-z0-9_-])$(sed 's/[][|.*^$]/\\&/g' <<<"$w")([^a-z0-9_-]|$)" "$f" ||
			out="$out $w"
	done
	echo "${out# }"
}
# covers PAGE WHAT NAME...: one result, failing with the names not there.
covers() {
	local page=$1 what=$2 m
	shift 2
	if [ $# = 0 ]; then
		fail "$page names every $what" "found none in the sources: the test's parsing is broken"
		return
	fi
	m=$(missing "$tmp/$page.txt" "$@")
	if [ -z "$m" ]; then
		pass "$page names every $what ($#)"
	else
		fail "$page names every $what" "missing: $m"
	fi
}

# ---------------------------------------------------------------------
# Rendering.
for p in $pages; do
	if [ ! -s "$man/$p" ]; then
		fail "$p was built" "no $man/$p: run make man"
		continue
	fi
	pass "$p was built"
	if err=$(groff -t -man -ww -z "$man/$p" 2>&1) && [ -z "$err" ]; then
		pass "$p: groff -man -ww -z: no warning"
	else
		fail "$p: groff -man -ww -z: no warning" "$err"
	fi
	# As man(1) shows it on a terminal (continuous, 80 columns).
	if err=$(groff -t -man -ww -Tutf8 -rcR=1 -rLL=80n "$man/$p" 2>&1 >"$tmp/$p.80") &&
	   [ -z "$err" ]; then
		pass "$p: groff -man -ww -Tutf8: no warning"
	else
		fail "$p: groff -man -ww -Tutf8: no warning" "$err"
	fi
	name=${p%.*} sec=${p##*.}
	if MANWIDTH=80 man -l "$man/$p" 2>/dev/null | head -n 1 |
	   grep -q "^${name^^}($sec)"; then
		pass "$p: man -l shows ${name^^}($sec)"
	else
		fail "$p: man -l shows ${name^^}($sec)" "$(MANWIDTH=80 man -l "$man/$p" 2>&1 | head -n 5)"
	fi
	text "$p" >"$tmp/$p.txt"
done

# ---------------------------------------------------------------------
# aheadfs(5) against the sources.
super=$top/kmod/super.c sysfs=$top/kmod/sysfs.c
opts=$(sed -nE 's/.*fsparam_[a-z0-9_]+\("([a-z0-9_]+)".*/\1/p' "$super")
modes=$(awk '/constant_table prefetch_modes/ { on = 1 } on && /^};/ { exit } on' "$super" |
	sed -nE 's/.*\{ *"([a-z]+)".*/\1/p')
params=$(sed -nE 's/^module_param_cb\(([a-z0-9_]+),.*/\1/p' "$super")
# The stat_names and op_names arrays, the window gauges, the attributes.
stats=$(awk '/stat_names\[AHEADFS_NR_STATS\]/ { on = 1 } on && /^};/ { exit } on' "$sysfs" |
	sed -nE 's/.*= "([a-z0-9_]+)".*/\1/p')
gauges=$(sed 's/\\n/ /g' "$sysfs" | grep -oE '[a-z_]+ %lld' | cut -d' ' -f1)
ops=$(awk '/op_names\[AHEADFS_NR_META_OPS\]/ { on = 1 } on && /^};/ { exit } on' "$sysfs" |
	sed -nE 's/.*= "([a-z0-9_]+)".*/\1/p')
files=$( { sed -nE 's/^TUNABLE\(([a-z0-9_]+)\);/\1/p' "$sysfs"
	sed -nE 's/.*\.attr = \{ \.name = "([a-z0-9_]+)".*/\1/p' "$sysfs"; } | sort -u)
covers aheadfs.5 "mount option of kmod/super.c" $opts
covers aheadfs.5 "prefetch mode" $modes
covers aheadfs.5 "module parameter of kmod/super.c" $params
covers aheadfs.5 "sysfs file of kmod/sysfs.c" $files
covers aheadfs.5 "statistic of kmod/sysfs.c" $stats $gauges
covers aheadfs.5 "op_ operation of kmod/sysfs.c" $ops
if [ "$(sort <<<"$opts")" = "$(sort <<<"$params")" ]; then
	pass "every mount option has a module parameter, and no more"
else
	fail "every mount option has a module parameter, and no more" "options: $(echo $opts)
params:  $(echo $params)"
fi

# The check above can fail: a page without one option is caught.
grep -vw window_kb "$tmp/aheadfs.5.txt" >"$tmp/cut.txt"
if [ "$(missing "$tmp/cut.txt" $opts)" = window_kb ]; then
	pass "a page missing window_kb is caught"
else
	fail "a page missing window_kb is caught" "missing() said: '$(missing "$tmp/cut.txt" $opts)'"
fi

# The built module documents each parameter; the modprobe.d file lists
# each at its default.
conf=$top/kmod/aheadfs.modprobe.conf
ko=$(ls -t "$top"/build/kmod/*/aheadfs.ko 2>/dev/null | head -n 1)
if [ -z "$ko" ]; then
	skip "modinfo: every parameter has a description" "no module built (make module)"
	skip "$(basename "$conf"): every parameter, commented, at modinfo's default" "no module built"
elif [ "$ko" -ot "$super" ]; then
	skip "modinfo: every parameter has a description" "$ko is older than kmod/super.c (make module)"
	skip "$(basename "$conf"): every parameter, commented, at modinfo's default" "$ko is stale"
else
	parm=$(modinfo -F parm "$ko")
	bad=
	for p in $params; do
		d=$(sed -n "s/^$p://p" <<<"$parm")
		grep -qE '.{20}\(default [^)]+\)' <<<"$d" || bad="$bad $p"
	done
	extra=$(comm -13 <(sort <<<"$params") <(cut -d: -f1 <<<"$parm" | sort))
	if [ -z "$bad$extra" ]; then
		pass "modinfo: every parameter has a description with its default"
	else
		fail "modinfo: every parameter has a description with its default" \
			"no description:$bad; not in the source: $(echo $extra)
$parm"
	fi
	bad=
	for p in $params; do
		def=$(sed -nE "s/^$p:.*\(default ([a-z0-9]+).*/\1/p" <<<"$parm")
		grep -qx "#options aheadfs $p=$def" "$conf" || bad="$bad $p=$def"
	done
	if [ -z "$bad" ]; then
		pass "$(basename "$conf"): every parameter, commented, at modinfo's default"
	else
		fail "$(basename "$conf"): every parameter, commented, at modinfo's default" \
			"no '#options aheadfs NAME=DEFAULT' line for:$bad"
	fi
fi
if grep -vE '^(#.*)?$' "$conf" | grep -q .; then
	fail "$(basename "$conf") sets nothing (every line a comment)" "$(grep -vE '^(#.*)?$' "$conf")"
else
	pass "$(basename "$conf") sets nothing (every line a comment)"
fi

# ---------------------------------------------------------------------
# The CLIs' own help against their pages.
# verbs HELP: "OBJECT VERB" (or "VERB") of each usage line of the help.
cli() { # cli PAGE BINARY HELPARGS VERBPATTERN
	local page=$1 bin=$2 help=$3 pat=$4 verbs longs
	if [ ! -x "$bin" ]; then
		skip "$page names every verb of $(basename "$bin") $help" "$bin not built"
		skip "$page names every long option of $(basename "$bin") $help" "$bin not built"
		return
	fi
	"$bin" $help >"$tmp/help" 2>&1
	verbs=$(sed -nE "$pat" "$tmp/help" | sort -u)
	longs=$(grep -oE -- '--[a-z][a-z-]+' "$tmp/help" | sort -u)
	covers "$page" "verb of $(basename "$bin") $help" $verbs
	covers "$page" "long option of $(basename "$bin") $help" $longs
}
cli aheadctl.8 "$top/userland/aheadctl" help \
	's/^  ([a-z]+( (show|set|ban|bw|power-cycle|save\|diff|snoop-mode))?)( .*)?$/\1/p'
cli aheadtrace.8 "$top/bpf/aheadtrace" --help 's/^  ([a-z]+) .*/\1/p'

# ---------------------------------------------------------------------
# Installation into a DESTDIR: the pages under MANDIR, the modprobe.d file,
# and an admin's edited file kept.
dest=$tmp/dest
if out=$(make -s -C "$top" install-man install-modprobe-conf DESTDIR="$dest" PREFIX=/usr 2>&1) &&
   [ -f "$dest/usr/share/man/man5/aheadfs.5" ] &&
   [ -f "$dest/usr/share/man/man8/aheadctl.8" ] &&
   [ -f "$dest/usr/share/man/man8/aheadtrace.8" ] &&
   cmp -s "$conf" "$dest/etc/modprobe.d/aheadfs.conf"; then
	pass "make install-man install-modprobe-conf installs the pages and modprobe.d/aheadfs.conf"
else
	fail "make install-man install-modprobe-conf installs the pages and modprobe.d/aheadfs.conf" \
		"$out
$(cd "$dest" 2>/dev/null && find . -type f)"
fi
echo 'options aheadfs txn_kb=1024' >>"$dest/etc/modprobe.d/aheadfs.conf"
if make -s -C "$top" install-modprobe-conf DESTDIR="$dest" >/dev/null 2>&1 &&
   tail -n 1 "$dest/etc/modprobe.d/aheadfs.conf" | grep -qx 'options aheadfs txn_kb=1024' &&
   cmp -s "$conf" "$dest/etc/modprobe.d/aheadfs.conf.dist"; then
	pass "a second install keeps an edited modprobe.d/aheadfs.conf (the new one as .dist)"
else
	fail "a second install keeps an edited modprobe.d/aheadfs.conf (the new one as .dist)" \
		"$(ls -l "$dest/etc/modprobe.d/")"
fi
if MANPATH=$dest/usr/share/man man -w aheadfs 2>/dev/null | grep -q "$dest/usr/share/man/man5/aheadfs.5"; then
	pass "man -w aheadfs finds the installed page"
else
	fail "man -w aheadfs finds the installed page" "$(MANPATH=$dest/usr/share/man man -w aheadfs 2>&1)"
fi
# make install puts the module where the kernel of KDIR looks for it, under
# its UTS_RELEASE: for Debian's 6.1 headers 6.1.0-N-amd64, where `make
# kernelrelease` says 6.1.192.  On a host with those headers (setup-deps).
kdir=$(ls -d /usr/src/linux-headers-6.1.[0-9]*-amd64 2>/dev/null | sort -V | tail -n 1)
if [ -z "$kdir" ]; then
	skip "make install KDIR=6.1 headers: the module under /lib/modules/RELEASE/updates" "no 6.1 headers"
else
	rel=${kdir#/usr/src/linux-headers-}
	if out=$(make -s -C "$top" install KDIR="$kdir" DESTDIR="$dest" PREFIX=/usr 2>&1) &&
	   [ "$(cd "$dest" && find lib/modules -name aheadfs.ko)" = "lib/modules/$rel/updates/aheadfs.ko" ]; then
		pass "make install KDIR=$kdir: the module under /lib/modules/$rel/updates"
	else
		fail "make install KDIR=$kdir: the module under /lib/modules/$rel/updates" \
			"$out
$(cd "$dest" && find lib -name '*.ko' 2>&1)"
	fi
fi

echo "1..$n"
exit $failed
