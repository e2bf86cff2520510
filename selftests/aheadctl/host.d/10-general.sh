# 10-general.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- general ----
run help
t "help: exit 0 and every object's verbs" '[ $rc = 0 ] && has "irq show" && has "irq set" && has "irq ban" && has "numa bw" && has "fs show" && has "fs set" && has "bios show" && has "bios set" && has "power-cycle" && has doctor'
run
t "no arguments: usage, exit 2" '[ $rc = 2 ] && haserr usage'
run frob
t "unknown object: one message, exit 2" '[ $rc = 2 ] && [ "$err" = "aheadctl: unknown object '"'"'frob'"'"' (irq, numa, fs, bios, doctor, help)" ]'
run -x irq
t "unknown option: exit 2" '[ $rc = 2 ] && haserr "unknown option"'

