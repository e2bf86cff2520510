# SPDX-License-Identifier: GPL-2.0
# kselftest: not installed
#
# smb-checks.sh: the checks export-smb.sh (ksmbd) and export-samba.sh
# (Samba's smbd) make alike over an SMB share of an aheadfs mount, sourced
# by both after ktap.sh, never run alone; installed beside them for
# run_kselftest.sh.  The caller has set:
#
#   lower   the lower directory of the aheadfs mount the share serves
#   mnt     that aheadfs mount
#   cli     where the SMB client mounted that share (//127.0.0.1/aheadfs)
#   work    a directory for the checks' own files
#   sid     the aheadfs mount's id, for its stats (/sys/fs/aheadfs/$sid)
#
# and calls smb_check_all, which runs each group below in turn.

stat_of() { awk -v k="$1" '$1 == k { print $2 }' "/sys/fs/aheadfs/$sid/stats"; }
# stats NAME...: their values, one line.
stats() { local s o=; for s in "$@"; do o="$o $(stat_of "$s")"; done; echo $o; }
# smb_sent SHARE CMD: the requests CMD (Reads, Writes, IOCTLs, Locks) the
# client has sent on its tree connect to //127.0.0.1/SHARE.
smb_sent() {
	awk -v t="//127.0.0.1/$1" -v c="$2:" '
		/^[0-9]+\) / { x = $2; gsub(/\\/, "/", x); on = (x == t) }
		on && $1 == c { print $2; exit }' /proc/fs/cifs/Stats
}

# A file rewritten in place on the lower, behind the server and the
# client, is read new over SMB; and so it is through a descriptor the
# client held open across the change.
smb_check_changed_on_lower() {
	local a b
	head -c $((4 << 20)) /dev/zero | tr '\0' 'A' >"$cli/stale"
	a=$(tr -d 'A' <"$cli/stale" | wc -c; head -c 4 "$cli/stale")
	head -c $((4 << 20)) /dev/zero | tr '\0' 'B' | dd of="$lower/stale" conv=notrunc status=none
	b=$(tr -d 'B' <"$cli/stale" | wc -c; head -c 4 "$cli/stale")
	check "a file changed on the lower is read new over SMB" "0
AAAA 0
BBBB" "$a $b"
	exec 6<"$cli/stale"
	head -c 4 <&6 >/dev/null
	printf CCCC | dd of="$lower/stale" conv=notrunc status=none
	check "a file changed on the lower is read new over SMB through a descriptor held open" CCCC \
		"$(python3 -c 'import os; print(os.pread(6, 4, 0).decode())' 2>&1)"
	exec 6<&-
}

# getlk FILE: the type of the lock F_GETLK finds on bytes 0-99.
smb_getlk() {
	python3 - "$1" <<'PY'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fl = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 100, 0)
t = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, fl))[0]
print({fcntl.F_WRLCK: "write", fcntl.F_RDLCK: "read", fcntl.F_UNLCK: "none"}[t])
PY
}
# smb_holder FILE STATE: a process that takes an fcntl write lock on bytes
# 0-99 of FILE, writes "locked" (or why not) to STATE and holds the lock
# until its stdin (fd 5 here) closes, then writes "unlocked".
smb_holder() {
	exec 5> >(exec python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
except OSError as e:
    open(sys.argv[2], "w").write("refused %s\n" % os.strerror(e.errno))
    sys.exit(0)
open(sys.argv[2], "w").write("locked\n")
sys.stdin.read()
fcntl.lockf(fd, fcntl.LOCK_UN, 100, 0)
os.close(fd)
open(sys.argv[2], "a").write("unlocked\n")
' "$1" "$2" 2>"$2.err")
}
# smb_state FILE: its first line once there (bounded wait).
smb_state() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && { head -n 1 "$1"; return; }
		[ -s "$1.err" ] && { cat "$1.err"; return; }
		sleep 0.1
	done
	echo "nothing after 30 s"
}
# smb_unlocked STATE: wait (bounded) for the holder's "unlocked".
smb_unlocked() {
	local i
	for i in $(seq 300); do
		grep -q unlocked "$1" && return
		sleep 0.1
	done
}
# smb_trylock FILE: take and drop an fcntl write lock on bytes 0-99, not
# waiting: "locked" or "refused".
smb_trylock() {
	python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
    print("locked")
except OSError as e:
    print("refused")' "$1" 2>&1
}

# Byte-range locks, from both sides: one the client takes over SMB is the
# server's lock on the aheadfs file and so an fcntl lock on the lower file,
# which a process on the lower finds (F_GETLK) and cannot take, until the
# client unlocks; and one held on the lower refuses the client's, until it
# is released there.
smb_check_locks() {
	local got l0
	printf '%4096s' x >"$lower/lockf"
	smb_holder "$cli/lockf" "$work/lock1"
	got=$(smb_state "$work/lock1")
	if [ "$got" = locked ]; then
		ok "the client takes a byte-range lock over SMB"
		check "the lock taken over SMB is an fcntl lock on the lower file (F_GETLK there)" write \
			"$(smb_getlk "$lower/lockf" 2>&1)"
		check "and on the aheadfs file (F_GETLK there)" write "$(smb_getlk "$mnt/lockf" 2>&1)"
		check "a process on the lower cannot take it" refused "$(smb_trylock "$lower/lockf")"
		exec 5>&-
		smb_unlocked "$work/lock1"
		check "the client's unlock over SMB leaves the lower file unlocked" none \
			"$(smb_getlk "$lower/lockf" 2>&1)"
	else
		exec 5>&-
		nok "the client takes a byte-range lock over SMB" "$got"
	fi
	smb_holder "$lower/lockf" "$work/lock2"
	got=$(smb_state "$work/lock2")
	if [ "$got" = locked ]; then
		l0=$(smb_sent aheadfs Locks)
		check "a lock held on the lower refuses the client's over SMB" refused \
			"$(smb_trylock "$cli/lockf")" "LOCK requests sent: $(($(smb_sent aheadfs Locks) - l0))"
		exec 5>&-
		smb_unlocked "$work/lock2"
		check "released on the lower, the client takes it over SMB" locked "$(smb_trylock "$cli/lockf")"
	else
		exec 5>&-
		nok "a process takes a lock on the lower" "$got"
	fi
}

# A rename over SMB is aheadfs's rename, in the lower.
smb_check_rename() {
	local o0
	echo renamed >"$cli/old"
	o0=$(stat_of op_rename)
	mv "$cli/old" "$cli/new"
	check "a rename over SMB reaches the lower (through aheadfs's rename)" "renamed absent 1" \
		"$(cat "$lower/new" 2>&1) $([ -e "$lower/old" ] && echo present || echo absent) $(($(stat_of op_rename) - o0))"
}

smb_check_all() {
	smb_check_locks
	smb_check_rename
	smb_check_changed_on_lower
}
