/* aheadctl.h: what the object files of aheadctl share. */
#ifndef AHEADCTL_H
#define AHEADCTL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define EXIT_USAGE 2		/* bad arguments */
#define EXIT_FAILED 1		/* the operation failed; nothing half-applied */
#define MAXCPUS 4096

struct opts {
	bool json;		/* -j */
	bool dry_run;		/* -n */
	bool yes;		/* --yes: confirm writes that reach a BMC */
};
extern struct opts g;

/* util.c */
void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *sysfs_root(void);
const char *proc_root(void);
const char *etc_root(void);
const char *var_root(void);	/* apply's record: VAR/lib/aheadctl/ */
char *xsprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xcalloc(size_t n, size_t sz);
char *xstrdup(const char *s);
/* SIGINT and SIGTERM to handler (NULL: back as they were). */
struct stop_signals {
	struct sigaction old[2];
	bool set[2];
};
void catch_stop_signals(void (*handler)(int), struct stop_signals *saved);
/* The whole file with the trailing newline stripped, or NULL (errno set:
 * EFBIG above READ_FILE_MAX). */
#define READ_FILE_MAX (64 << 20)
char *read_file(const char *path);
char *read_file_len(const char *path, size_t *len);	/* len: bytes read, NULs too */
int read_int(const char *path, long long *val);
/* Writes buf with one write(2); returns 0 or -errno. */
int write_file(const char *path, const char *buf);
/* text into path by a mkstemp file, synced, renamed over it, the
 * directory synced; -1, errno, *failed. */
int write_atomic(const char *path, const char *text, unsigned int mode, char **failed);
bool parse_u64(const char *s, unsigned long long *v);	/* no leading zero */
bool parse_size(const char *s, unsigned long long *v);
char *shell_quote(const char *s);	/* malloc'd */
const char *shq(const char *s);		/* quoted, kept until shq_free() */
void shq_free(void);
/* stdout and stderr write control characters as \u00XX (main() calls it). */
void guard_stdio(void);
/* Owned by root or us, writable by no one else, nor its directories. */
int check_trusted(const char *path, const char *what);

/* A CPU set as a plain bool array, independent of the libc cpu_set_t size. */
struct cpus {
	bool on[MAXCPUS];
};
int cpulist_parse(const char *s, struct cpus *c);	/* 0 or -1 */
char *cpulist_format(const struct cpus *c);		/* malloc'd, "" if empty */
int cpumask_parse(const char *s, struct cpus *c);	/* hex "ff,00000001" */
char *cpumask_format(const struct cpus *c);		/* hex, 32-bit groups */
int cpus_count(const struct cpus *c);
int cpus_nth(const struct cpus *c, int n);	/* n-th set CPU, or -1 */
bool cpus_subset(const struct cpus *a, const struct cpus *b);
int online_cpus(struct cpus *c);
int node_cpus(int node, struct cpus *c);

/* json.c: a streaming writer to stdout; commas and nesting are tracked. */
void jopen(char kind);			/* '{' or '[' */
void jclose(void);
void jkey(const char *k);
void jstr(const char *k, const char *v);	/* k may be NULL inside arrays */
void jint(const char *k, long long v);
void jnum(const char *k, double v);
void jbool(const char *k, bool v);
void jnull(const char *k);
void jend(void);			/* newline after the top value */
/* err() notes its first message here: the error document's, under -j. */
void json_error(const char *msg);
void json_error_reset(void);
/* At exit: prints the one document (the error document on a failure);
 * returns the status to exit with. */
int json_finish(int status);

/* objects */
int cmd_fs(int argc, char **argv);
int cmd_irq(int argc, char **argv);
int cmd_numa(int argc, char **argv);
int cmd_bios(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* irq.c, for doctor.c */
struct doctor;
void doctor_finding(struct doctor *d, const char *area, const char *what,
		    const char *fix);
void doctor_irq(struct doctor *d);
int nic_probe(const char *dev, char **problem, char **bdf);
void doctor_fs(struct doctor *d);
/* fs.c: a mounts/mountinfo field with its \ooo escapes undone, malloc'd. */
char *mount_unescape(const char *s);
/* numa.c: the bandwidth matrix; remote/local below this is flagged */
#define BW_RATIO_THRESHOLD 0.25
int irqbalance_pid(void);
/* size: the least per-thread buffer (the LLC may ask more); threads 0: one per CPU */
int numa_run(unsigned long long size, int threads, double seconds);
/* The verdict of the last numa_run(), malloc'd; ratio -1 if nothing to compare. */
char *numa_verdict(double *ratio, bool *flagged);
int numa_nodes(void);		/* in sysfs_root() */
int numa_host_nodes(void);	/* libnuma's, where numa_run() measures */

/* bios: backends */
struct bmc {
	const char *url;	/* https://host, or http://... with --insecure-http */
	const char *user;
	char *password;
	bool insecure;		/* --insecure: TLS certificate not verified */
	const char *ca_file;	/* --ca: the CA bundle that verifies the BMC */
	bool insecure_http;	/* --insecure-http: plain HTTP allowed */
	bool force;		/* --force: hard reset instead of a graceful one */
	long timeout;		/* --timeout: seconds for one answer of the BMC */
	bool timeout_given;	/* --timeout given (vendor tools have their own default) */
	long wait;		/* --wait: seconds for a graceful shutdown */
	const char *system;	/* Systems member id, if several */
};
/* What a reset did (or would do under -n): for the messages and -j. */
struct reset_info {
	const char *via;	/* redfish, ipmi, racadm, ilorest */
	const char *type;	/* e.g. GracefulRestart, "chassis power cycle" */
	bool graceful;
	bool requested;		/* false under -n */
	double waited;		/* seconds waited for power-off, if any */
};
void reset_json(const struct reset_info *r);	/* "reset": {...} */
int bmc_password(struct bmc *b, const char *file);
struct snoop_map {
	const char *vendor;	/* match on Manufacturer, case-insensitive prefix */
	const char *attr;
	const char *val[4];	/* home, early, cod, osb; NULL = not offered */
};
extern const struct snoop_map snoop_maps[];
extern const char *const snoop_modes[4];
int snoop_mode_index(const char *mode);
const struct snoop_map *snoop_map_for(const char *manufacturer);
int redfish_show(struct bmc *b);
int redfish_set(struct bmc *b, int mode, bool reboot);
int redfish_reset(struct bmc *b);
int ipmi_show(struct bmc *b);
int ipmi_power_cycle(struct bmc *b);
int ipmi_reset(struct bmc *b, struct reset_info *r);
/* IPMI's view of --bmc: host and port apart (malloc'd); -1 after a message. */
int bmc_host_port(const char *url, char **host, char **port);
int vendor_show(const char *tool, const struct bmc *b);
int vendor_set(const char *tool, int mode, bool reboot, struct bmc *b);
bool vendor_known(const char *tool);
bool vendor_reboots_itself(const char *tool, bool force);
bool vendor_reboot_ipmi(const char *tool, bool force);
/*
 * Runs argv with our environment less the BMC secrets, plus envp_add;
 * keep_fd (or -1) is inherited; output captured into *out if out != NULL,
 * at most RUN_OUTPUT_MAX bytes (more: the command is stopped, RUN_TOO_BIG).
 * The command runs in a process group of its own.
 */
#define RUN_OUTPUT_MAX (4 << 20)
int run_cmd(char *const argv[], char *const envp_add[], int keep_fd, char **out);
/*
 * The same, its process group ended after seconds (0: no limit):
 * RUN_TIMED_OUT then.  Both are above any exit status.
 */
#define RUN_TIMED_OUT 1000
#define RUN_TOO_BIG 1001
int run_cmd_limit(char *const argv[], char *const envp_add[], int keep_fd, char **out,
		  long seconds);

/* config.c: aheadctl.conf (apply, verify), and running our own verbs */
int cmd_apply(int argc, char **argv);
int cmd_verify(int argc, char **argv);
struct conf;
struct json_t;
char *conf_default_path(void);
struct conf *conf_read(const char *path);	/* NULL after a message */
void conf_free(struct conf *c);
const char *conf_snapshot(const struct conf *c);
bool conf_has_bmc(const struct conf *c);	/* [bios] names a bmc */
/* The BMC's snoop mode ([bios] bmc), NULL if none; *expected: snoop-mode. */
char *conf_snoop_mode(const struct conf *c, const char **expected, bool quiet);
char *conf_bios_fix(const struct conf *c, const char *mode);
/* Runs this aheadctl with args, stdout into *out; its exit status. */
int self_run(char *const args[], char **out, bool quiet);
struct json_t *self_json(char *const args[], int *rc, bool quiet);
void jvalue(const char *k, const struct json_t *v);	/* re-emits parsed JSON */

/*
 * undo.c: each value a write replaces, noted before it is written: sent to
 * apply's journal (on disk) when apply runs the verb, so that revert puts
 * it back, and kept in an undo_log for the verb's own rollback (NULL: not
 * kept).  file: a whole file of ours (the policy script), old NULL when it
 * did not exist.  undo_note: 0, or -1 after a message (the record could
 * not be written: the value must not be).  undo_unnote: the last value
 * noted was not written (its write was refused).
 */
struct undo_log;
struct state;
struct undo_log *undo_new(void);
int undo_note(struct undo_log *l, const char *path, const char *old, const char *what,
	      bool file);
void undo_unnote(struct undo_log *l);
void undo_rollback(struct undo_log *l);	/* newest first, said on stderr */
void undo_free(struct undo_log *l);
struct state *undo_begin(const char *config);	/* NULL after a message */
int undo_end(struct state *st, int *added);	/* values recorded, or -1 */
char *undo_state_path(void);
int cmd_revert(int argc, char **argv);

/* snapshot.c; doctor_note is doctor.c's (s is malloc'd and kept) */
int cmd_snapshot(int argc, char **argv);
void doctor_snapshot(struct doctor *d, bool skip_bw);
void doctor_note(struct doctor *d, char *s);
void doctor_not_checked(struct doctor *d, char *s);

/* Fuzzing entry points (userland/fuzz/): each parser on arbitrary bytes. */
void fuzz_conf(const char *data, size_t n);
void fuzz_interrupts(const char *data, size_t n);
void fuzz_mountinfo(const char *data, size_t n);
void fuzz_snapshot(const char *data, size_t n);
void fuzz_redfish_answer(const char *data, size_t n);

#endif
