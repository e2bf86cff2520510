/* util.c: messages, the overridable sysfs/proc roots, files, CPU lists. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aheadctl.h"

/* The message on stderr; under -j the first one is also the error document's. */
void err(const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0) {
		fprintf(stderr, "aheadctl: %s\n", fmt);
		json_error(fmt);
		return;
	}
	fprintf(stderr, "aheadctl: %s\n", msg);
	json_error(msg);
	free(msg);
}

void warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("aheadctl: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Progress for humans: stderr under -j so stdout stays one JSON value. */
void info(const char *fmt, ...)
{
	va_list ap;
	FILE *f = g.json ? stderr : stdout;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	va_end(ap);
}

static const char *root_env(const char *env, const char *dflt)
{
	const char *r = getenv(env);

	return r && *r ? r : dflt;
}

const char *sysfs_root(void) { return root_env("AHEADCTL_SYSFS_ROOT", "/sys"); }
const char *proc_root(void) { return root_env("AHEADCTL_PROC_ROOT", "/proc"); }
const char *etc_root(void) { return root_env("AHEADCTL_ETC_ROOT", "/etc"); }
const char *var_root(void) { return root_env("AHEADCTL_VAR_ROOT", "/var"); }

char *xsprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		err("out of memory");
		exit(EXIT_FAILED);
	}
	va_end(ap);
	return s;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p) {
		err("out of memory");
		exit(EXIT_FAILED);
	}
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		err("out of memory");
		exit(EXIT_FAILED);
	}
	return p;
}

/*
 * procfs and sysfs report st_size 0, so the buffer grows as the file is read:
 * a node running containers has a mountinfo of megabytes, and a 256-CPU
 * /proc/interrupts is over 1 MiB.  READ_FILE_MAX only stops a runaway file.
 * *lenp (if not NULL): the bytes read, NULs included, before the trailing
 * newlines and blanks are stripped.
 */
char *read_file_len(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	buf = xcalloc(1, cap + 1);
	while ((n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += n;
		if (len == cap && cap >= READ_FILE_MAX) {
			close(fd);
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (!buf) {
				err("out of memory");
				exit(EXIT_FAILED);
			}
		}
	}
	if (n < 0) {
		int e = errno;

		close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	close(fd);
	buf[len] = 0;
	if (lenp)
		*lenp = len;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = 0;
	return buf;
}

char *read_file(const char *path)
{
	return read_file_len(path, NULL);
}

int read_int(const char *path, long long *val)
{
	char *s = read_file(path), *end;

	if (!s)
		return -1;
	errno = 0;
	*val = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		free(s);
		errno = EINVAL;
		return -1;
	}
	free(s);
	return 0;
}

int write_file(const char *path, const char *buf)
{
	ssize_t n;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, buf, strlen(buf));
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (close(fd) < 0)
		return -errno;
	return (size_t)n == strlen(buf) ? 0 : -EIO;
}

/*
 * A decimal number as the kernel prints it: no sign, no blanks, no leading
 * zero (08192 would be compared as text with the 8192 read back, and is
 * octal to some readers).
 */
bool parse_u64(const char *s, unsigned long long *v)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s) || (s[0] == '0' && s[1]))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end;
}

/* 64M, 1G, 4096, 512K: binary units. */
bool parse_size(const char *s, unsigned long long *v)
{
	char *end;
	unsigned long long m = 1;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno)
		return false;
	switch (toupper((unsigned char)*end)) {
	case 0: break;
	case 'K': m = 1ULL << 10; end++; break;
	case 'M': m = 1ULL << 20; end++; break;
	case 'G': m = 1ULL << 30; end++; break;
	default: return false;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || *v > (~0ULL) / m)
		return false;
	*v *= m;
	return true;
}

int cpulist_parse(const char *s, struct cpus *c)
{
	memset(c, 0, sizeof(*c));
	while (s && *s) {
		char *end;
		long a, b;

		if (!isdigit((unsigned char)*s))
			return -1;
		a = strtol(s, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -1;
			b = strtol(end + 1, &end, 10);
		}
		if (a > b || b >= MAXCPUS)
			return -1;
		for (long i = a; i <= b; i++)
			c->on[i] = true;
		if (*end == ',')
			end++;
		else if (*end && *end != '\n')
			return -1;
		else if (*end == '\n')
			end++;
		s = end;
	}
	return 0;
}

char *cpulist_format(const struct cpus *c)
{
	char *out = xcalloc(1, MAXCPUS * 6);
	size_t n = 0;

	for (int i = 0; i < MAXCPUS; i++) {
		int j = i;

		if (!c->on[i])
			continue;
		while (j + 1 < MAXCPUS && c->on[j + 1])
			j++;
		n += sprintf(out + n, n ? ",%d" : "%d", i);
		if (j > i)
			n += sprintf(out + n, "-%d", j);
		i = j;
	}
	return out;
}

int cpumask_parse(const char *s, struct cpus *c)
{
	int len, bit = 0;

	memset(c, 0, sizeof(*c));
	if (!s || !*s)
		return -1;
	len = strlen(s);
	for (int i = len - 1; i >= 0; i--) {
		int v;

		if (s[i] == ',')
			continue;
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		v = isdigit((unsigned char)s[i]) ? s[i] - '0' :
			tolower((unsigned char)s[i]) - 'a' + 10;
		for (int k = 0; k < 4; k++, bit++)
			if (v & (1 << k)) {
				if (bit >= MAXCPUS)
					return -1;
				c->on[bit] = true;
			}
	}
	return 0;
}

char *cpumask_format(const struct cpus *c)
{
	int top = 0, words;
	char *out, *p;

	for (int i = 0; i < MAXCPUS; i++)
		if (c->on[i])
			top = i;
	words = top / 32 + 1;
	out = p = xcalloc(1, words * 9 + 1);
	for (int w = words - 1; w >= 0; w--) {
		unsigned int v = 0;

		for (int b = 0; b < 32; b++)
			if (c->on[w * 32 + b])
				v |= 1U << b;
		p += sprintf(p, w == words - 1 ? "%x" : ",%08x", v);
	}
	return out;
}

int cpus_count(const struct cpus *c)
{
	int n = 0;

	for (int i = 0; i < MAXCPUS; i++)
		n += c->on[i];
	return n;
}

int cpus_nth(const struct cpus *c, int n)
{
	for (int i = 0; i < MAXCPUS; i++)
		if (c->on[i] && n-- == 0)
			return i;
	return -1;
}

bool cpus_subset(const struct cpus *a, const struct cpus *b)
{
	for (int i = 0; i < MAXCPUS; i++)
		if (a->on[i] && !b->on[i])
			return false;
	return true;
}

static int cpus_from_file(const char *path, struct cpus *c)
{
	char *s = read_file(path);
	int r;

	if (!s)
		return -1;
	r = cpulist_parse(s, c);
	free(s);
	return r;
}

int online_cpus(struct cpus *c)
{
	char *p = xsprintf("%s/devices/system/cpu/online", sysfs_root());
	int r = cpus_from_file(p, c);

	free(p);
	return r;
}

int node_cpus(int node, struct cpus *c)
{
	char *p = xsprintf("%s/devices/system/node/node%d/cpulist",
			   sysfs_root(), node);
	int r = cpus_from_file(p, c);

	free(p);
	return r;
}

/* Variables that carry a BMC secret: no child of ours ever sees them. */
static const char *const secret_env[] = { "AHEADCTL_BMC_PASSWORD=", "IPMI_PASSWORD=", NULL };

static bool is_secret(const char *var)
{
	for (int i = 0; secret_env[i]; i++)
		if (!strncmp(var, secret_env[i], strlen(secret_env[i])))
			return true;
	return false;
}

/* Our environment less the secrets, plus add (NULL-terminated, may be NULL). */
static char **child_env(char *const add[])
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	for (size_t i = 0; add && add[i]; i++)
		n++;
	env = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; environ[i]; i++)
		if (!is_secret(environ[i]))
			env[k++] = environ[i];
	for (size_t i = 0; add && add[i]; i++)
		env[k++] = add[i];
	env[k] = NULL;
	return env;
}

/*
 * Runs a helper tool; stdout captured when out is given, stderr passed
 * through.  The child gets our environment without the BMC secrets (vendor
 * tools have no business with them); what one child must know comes in
 * envp_add, or through keep_fd (>= 0), the one descriptor of ours it
 * inherits, e.g. a pipe holding a password.
 */
int run_cmd(char *const argv[], char *const envp_add[], int keep_fd, char **out)
{
	return run_cmd_limit(argv, envp_add, keep_fd, out, 0);
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The running command's process group, for the signal forwarder. */
static volatile sig_atomic_t child_pgrp;

/*
 * Ctrl-C or SIGTERM while a command runs: the command is in a process
 * group of its own (so that a deadline ends all of it), which the
 * terminal's signal no longer reaches; it is passed on, then acts on us.
 */
static void forward_signal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (child_pgrp > 0)
		kill(-child_pgrp, sig);
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);	/* delivered when the handler returns: the default action */
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

/* on: forwarders where the signal acts by default (not one ignored or caught). */
static void forward_signals(bool on, bool *installed)
{
	struct sigaction sa = { .sa_handler = forward_signal }, old;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++) {
		if (on) {
			sigaction(forwarded[i], NULL, &old);
			installed[i] = old.sa_handler == SIG_DFL;
			if (installed[i])
				sigaction(forwarded[i], &sa, NULL);
		} else if (installed[i]) {
			signal(forwarded[i], SIG_DFL);
		}
	}
}

/* Ends the command's whole process group: SIGTERM, then SIGKILL after 2 s. */
static void end_group(pid_t pid, int *status)
{
	double until = mono_now() + 2;

	kill(-pid, SIGTERM);
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		struct timespec tick = { 0, 20 * 1000 * 1000 };

		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (mono_now() >= until) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		nanosleep(&tick, NULL);
	}
	kill(-pid, SIGKILL);	/* what it left behind in its group */
}

/* Reads the command's output, up to the deadline (0: none) and RUN_OUTPUT_MAX. */
static int read_output(int fd, char **out, double deadline)
{
	size_t len = 0, cap = 4096;
	int rc = 0;

	*out = xcalloc(1, cap + 1);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ms = -1, r;
		ssize_t n;

		if (deadline) {
			double left = deadline - mono_now();

			if (left <= 0) {
				rc = RUN_TIMED_OUT;
				break;
			}
			ms = left * 1000 + 1;
		}
		r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				break;
			continue;	/* the deadline, checked above */
		}
		n = read(fd, *out + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		if (len == cap && cap >= RUN_OUTPUT_MAX) {
			rc = RUN_TOO_BIG;
			break;
		}
		if (len == cap) {
			cap *= 2;
			*out = realloc(*out, cap + 1);
			if (!*out)
				exit(EXIT_FAILED);
		}
	}
	(*out)[len] = 0;
	return rc;
}

/*
 * The same, ended at the deadline (seconds > 0) or when its output passes
 * RUN_OUTPUT_MAX: its whole process group is stopped (a tool's own
 * children with it), and RUN_TIMED_OUT or RUN_TOO_BIG returned.
 */
int run_cmd_limit(char *const argv[], char *const envp_add[], int keep_fd, char **out,
		  long seconds)
{
	int pfd[2] = { -1, -1 }, status = 0, rc = 0;
	char **env = child_env(envp_add);
	double deadline = seconds > 0 ? mono_now() + seconds : 0;
	bool installed[NFORWARDED] = { false };
	pid_t pid;

	if (out)
		*out = NULL;
	if (out && pipe2(pfd, O_CLOEXEC) < 0) {
		free(env);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		free(env);
		if (out) {
			close(pfd[0]);
			close(pfd[1]);
		}
		errno = e;
		return -1;
	}
	if (pid == 0) {
		/* exec resets what we catch; what we were told to ignore stays so. */
		setpgid(0, 0);
		if (out)
			dup2(pfd[1], 1);
		if (keep_fd >= 0)
			fcntl(keep_fd, F_SETFD, 0);
		execvpe(argv[0], argv, env);
		fprintf(stderr, "aheadctl: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	/* Here too, so that the group exists before any kill below. */
	setpgid(pid, pid);
	child_pgrp = pid;
	forward_signals(true, installed);
	free(env);
	if (out) {
		close(pfd[1]);
		rc = read_output(pfd[0], out, deadline);
		close(pfd[0]);
	}
	while (!rc) {
		pid_t w = waitpid(pid, &status, deadline ? WNOHANG : 0);
		struct timespec tick = { 0, 20 * 1000 * 1000 };

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		if (w == 0 && mono_now() >= deadline)
			rc = RUN_TIMED_OUT;
		else if (w == 0)
			nanosleep(&tick, NULL);
	}
	if (rc == RUN_TIMED_OUT || rc == RUN_TOO_BIG)
		end_group(pid, &status);
	forward_signals(false, installed);
	child_pgrp = 0;
	if (rc)
		return rc;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static bool ctl_byte(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * One shell word for s.  Plain words as they are; others in '...'; a word
 * with a control character (a newline, an escape) in $'...' with octal
 * escapes, so the line pasted is one line, runs the one command and shows
 * no terminal escape.
 */
char *shell_quote(const char *s)
{
	size_t n = 4;
	char *out, *o;
	bool ctl = false;

	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_.,:=@%+-") == strlen(s))
		return xstrdup(s);
	for (const char *p = s; *p; p++)
		ctl |= ctl_byte(*p);
	for (const char *p = s; *p; p++)
		n += ctl ? 4 : *p == '\'' ? 4 : 1;
	out = o = xcalloc(1, n);
	if (ctl)
		*o++ = '$';
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		unsigned char c = *p;

		if (ctl && (ctl_byte(c) || c == '\'' || c == '\\')) {
			o += sprintf(o, "\\%03o", c);
		} else if (!ctl && c == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = c;
		}
	}
	*o++ = '\'';
	return out;
}

/* Quoted words kept until shq_free(): for building many fix lines. */
static char **shq_pool;
static size_t shq_n;

const char *shq(const char *s)
{
	char **np = realloc(shq_pool, (shq_n + 1) * sizeof(*np));

	if (!np) {
		err("out of memory");
		exit(EXIT_FAILED);
	}
	shq_pool = np;
	return shq_pool[shq_n++] = shell_quote(s ? s : "");
}

void shq_free(void)
{
	while (shq_n)
		free(shq_pool[--shq_n]);
	free(shq_pool);
	shq_pool = NULL;
}

/*
 * stdout and stderr pass through here: strings from snapshots, sysfs and
 * BMCs are printed as they came, and a control character in one (an escape
 * sequence, a carriage return) would act on the terminal.  C0 controls but
 * newline and tab, DEL, and the C1 controls (U+0080 to U+009F in UTF-8) are
 * written as \u00XX, which is also what JSON would have, so a document
 * stays valid.
 */
struct tty_guard {
	int fd;
	bool c2;		/* a 0xc2 byte held back: the start of a C1? */
};

static int put_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = EIO;
		if (w <= 0)
			return -1;
		b += w;
		n -= w;
	}
	return 0;
}

static ssize_t guard_write(void *cookie, const char *buf, size_t size)
{
	struct tty_guard *t = cookie;
	char out[4096 + 16];
	size_t o = 0;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = buf[i];

		if (o > 4096) {
			if (put_all(t->fd, out, o))
				return i ? (ssize_t)i : -1;
			o = 0;
		}
		if (t->c2) {
			t->c2 = false;
			if (c >= 0x80 && c <= 0x9f) {
				o += sprintf(out + o, "\\u%04x", c);
				continue;
			}
			out[o++] = (char)0xc2;
		}
		if (c == 0xc2)
			t->c2 = true;
		else if (ctl_byte(c) && c != '\n' && c != '\t')
			o += sprintf(out + o, "\\u%04x", c);
		else
			out[o++] = c;
	}
	if (o && put_all(t->fd, out, o))
		return -1;
	return size;
}

static int guard_close(void *cookie)
{
	struct tty_guard *t = cookie;

	if (t->c2)
		put_all(t->fd, "\xc2", 1);
	return 0;
}

void guard_stdio(void)
{
	static struct tty_guard to = { 1, false }, te = { 2, false };
	cookie_io_functions_t io = { .write = guard_write, .close = guard_close };
	FILE *o = fopencookie(&to, "w", io), *e = fopencookie(&te, "w", io);

	if (!o || !e)
		return;
	setvbuf(o, NULL, isatty(1) ? _IOLBF : _IOFBF, 0);
	setvbuf(e, NULL, _IONBF, 0);
	stdout = o;
	stderr = e;
}

/*
 * As sshd's StrictModes: a file whose contents we act on (the config, a
 * password file) and every directory above it must be owned by root or by
 * us and writable by no one else; a sticky directory (/tmp) may be written
 * by others, who cannot replace what is ours in it.  0, or -1 after a
 * message that names the file and why.
 */
int check_trusted(const char *path, const char *what)
{
	char *real = realpath(path, NULL), *p;
	int rc = 0;

	if (!real)
		return 0;	/* the caller's open reports it */
	p = real + strlen(real);
	for (bool file = true; ; file = false) {
		struct stat st;
		const char *name = *real ? real : "/";

		if (stat(name, &st)) {
			err("%s %s: %s", what, name, strerror(errno));
			rc = -1;
			break;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			err("%s %s: %s%s is owned by uid %u, neither root nor you: refusing it",
			    what, path, file ? "it" : "its directory ", file ? "" : name,
			    (unsigned int)st.st_uid);
			rc = -1;
			break;
		}
		if ((st.st_mode & 022) && (file || !(st.st_mode & S_ISVTX))) {
			err("%s %s: %s%s is writable by %s (mode %04o): refusing it (chmod go-w %s)",
			    what, path, file ? "it" : "its directory ", file ? "" : name,
			    st.st_mode & 002 ? "everyone" : "its group",
			    (unsigned int)(st.st_mode & 07777), name);
			rc = -1;
			break;
		}
		if (!*real)
			break;
		while (p > real && *--p != '/')
			;
		*p = 0;
	}
	free(real);
	return rc;
}

/* fsync of the directory that holds path: a rename in it is on disk. */
static int sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xsprintf("%.*s", slash == path ? 1 : (int)(slash - path), path) :
		xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), e = 0;

	if (fd < 0 || fsync(fd))
		e = errno;
	if (fd >= 0)
		close(fd);
	free(dir);
	errno = e;
	return e ? -1 : 0;
}

/*
 * text into path through a new file beside it (mkstemp, so nothing planted
 * under a fixed name is followed), synced, renamed over path, and the
 * directory synced: after a crash path holds the old text or the new, and
 * the new once this returns.  0, or -1 with errno set and *failed (if not
 * NULL) the file that failed, malloc'd.
 */
int write_atomic(const char *path, const char *text, unsigned int mode, char **failed)
{
	const char *slash = strrchr(path, '/');
	char *tmp = xsprintf("%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0, path,
			     slash ? slash + 1 : path);
	size_t len = strlen(text);
	int fd = mkstemp(tmp), e = 0;

	if (failed)
		*failed = NULL;
	if (fd < 0) {
		e = errno;
		if (failed)
			*failed = xstrdup(path);
		free(tmp);
		errno = e;
		return -1;
	}
	/* Each step's own errno: none is taken from an earlier call. */
	errno = 0;
	if (fchmod(fd, mode) || put_all(fd, text, len) || fsync(fd))
		e = errno ? errno : EIO;
	if (close(fd) && !e)
		e = errno;
	if (!e && rename(tmp, path))
		e = errno;
	if (e) {
		unlink(tmp);
		if (failed)
			*failed = tmp;
		else
			free(tmp);
		errno = e;
		return -1;
	}
	free(tmp);
	if (sync_dir(path)) {
		e = errno;
		if (failed)
			*failed = xstrdup(path);
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * SIGINT and SIGTERM to @handler (SA_RESETHAND: a second one ends the
 * process), each but one ignored by whoever started us (nohup, a
 * background job), which stays ignored; catch_stop_signals(NULL, saved)
 * puts back what was there, so that a catcher inside another (apply's
 * bios section reaching the BMC) leaves the outer one in place.
 */
void catch_stop_signals(void (*handler)(int), struct stop_signals *saved)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa = { .sa_handler = handler,
				.sa_flags = SA_RESETHAND };

	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 2; i++) {
		if (!handler) {
			if (saved->set[i])
				sigaction(sigs[i], &saved->old[i], NULL);
			saved->set[i] = false;
			continue;
		}
		sigaction(sigs[i], NULL, &saved->old[i]);
		saved->set[i] = saved->old[i].sa_handler != SIG_IGN;
		if (saved->set[i])
			sigaction(sigs[i], &sa, NULL);
	}
}
