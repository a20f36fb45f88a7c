/* SPDX-License-Identifier: MIT */
/*
 * Route files. Lines are cut with memchr() and parsed in place by a
 * hand-written tokenizer: a full table (a million lines) parses in a
 * fraction of a second, with no allocation per line. What a line says is
 * kept as a 48-byte op; its nexthop paths go to a side array where equal
 * path sets are stored once (the routes of a full table share a handful).
 */
#define _GNU_SOURCE /* mremap() */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "lib/ifname.h"
#include "lib/names.h"
#include "lib/routefile.h"

#define RF_QUOTE_MAX  32         /* bytes of a token quoted in a message, "..." included */
#define RF_READ_CHUNK (4u << 20) /* routefile_read_file()'s read() size */
#define RF_NONE       UINT32_MAX /* no entry in a side array */
#define RF_IFCACHE    4          /* interface names a file's parse remembers */
#define RF_OPS_FIRST  1024       /* ops of a first mapping: 32 KiB, whole pages */
#define RF_PIPE_BATCH 4096       /* ops a load's parser publishes at a time */
/*
 * Ops of a load that come out of key order are put in key order this many
 * at a time (rf_order()): a power of two, so that an op's place in the
 * apply order is an offset in its chunk. A shuffled full view took 0.80-0.92
 * s to load with chunks of 2^16, 0.74-0.80 with 2^18, and 0.82-1.12 with
 * 2^20, where the applier waits for the whole parse (docs/BENCHMARKS.md,
 * issue 9's sixteenth round).
 */
#define RF_SORT_CHUNK (1u << 18)
#define RF_PIPE_TAKE  65536      /* ops its applier takes before it looks again */
#define RF_STR_(x)    #x
#define RF_STR(x)     RF_STR_(x)

/* CLOCK_MONOTONIC in nanoseconds, for struct routefile_result's times. */
static uint64_t rf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ compact ops */

#define RF_OP_DEL  0x1 /* a delete, else an add */
#define RF_OP_NHID 0x2 /* nh is a nexthop object's id, not a path index */

/* One parsed line, as the parse makes it (the ops array holds it packed: struct rf_rec). */
struct rf_op {
	uint8_t addr[16]; /* network order, as struct addr's bytes */
	uint64_t line;
	uint32_t table, metric;
	uint32_t nh; /* n_paths > 0: first path in rf->paths; RF_OP_NHID: the id */
	uint8_t family, plen, type, proto;
	uint8_t scope, n_paths, flags, kind; /* flags: FIB_F_*; kind: RF_OP_* */
	uint32_t col; /* the prefix's column, for an error found when the op applies */
};

/*
 * How a whole file's ops are held: 32 bytes each, a million for a full
 * table, new memory a load's parser writes. The line, the prefix's column
 * and the table go to the side array of runs: a run of ops on consecutive
 * lines, the prefix in one column, one table (a route file of one format
 * is one run; a blank, comment or bad line starts another).
 */
struct rf_rec {
	uint8_t addr[16];
	uint32_t metric, nh;
	uint8_t family, plen, type, proto;
	uint8_t scope, n_paths, flags, kind;
};

_Static_assert(sizeof(struct rf_rec) == 32, "a full table holds a million ops");

struct rf_run {
	uint64_t op;   /* its first op */
	uint64_t line; /* that op's; the next ones' follow */
	uint32_t col, table;
};

/*
 * What an applied op changed, kept until the apply ends. The prefix and
 * table are the op's; so are the metric, type, protocol and scope of the
 * route that went in, when it went in as the op said (an add: nearly
 * every op), and only its nexthop is kept. The rest goes to a side array
 * (struct rf_side): the route that came out (replace, delete), and one
 * that went in otherwise (what a delete left of an IPv6 route's paths).
 */
struct rf_undo {
	struct nh *nh; /* with added_op: the nexthop of the route that went in */
	uint32_t side; /* index in rf->side, or RF_NONE */
	uint8_t at;
	bool added_op; /* a route went in, the op's but for its nexthop */
};

struct rf_side {
	struct fib_route added, removed;
	bool has_added;   /* a route went in, not the op's */
	bool has_removed; /* a route came out (rf_commit() lets its nexthop go) */
};

_Static_assert(sizeof(struct rf_undo) == 16, "the journal costs 16 bytes per op");
_Static_assert(sizeof(struct fib_route) == 16, "rf_rec_made() and rf_undo_load() name its fields");
_Static_assert(sizeof(struct rf_rec) >= sizeof(struct rf_run) &&
		       sizeof(struct rf_rec) >= sizeof(struct rf_undo),
	       "a load's size check takes the ops as the largest array");

/* A set of paths stored once in rf->paths, found again by its hash. */
struct rf_pathset {
	uint32_t start, hash;
	uint32_t n; /* 0: an empty slot */
};

struct rf_bad {
	uint64_t line;
	uint32_t col;
	uint32_t msg; /* offset in rf->msgs */
};

struct rf_ifcache {
	char name[IF_NAMESIZE];
	uint32_t ifindex;
};

/*
 * A load (routefile_load_fd(), routefile_load_buf()): the file is read and
 * parsed on a thread of its own while the writer applies what is parsed.
 * The parser publishes its progress under the lock; the applier reads ops
 * below @published only, and the paths through the array @paths was when
 * they were published. So that those stay where they are: the ops array
 * is mapped whole before the parse starts, and path arrays the parse
 * outgrows are freed only when it ends.
 */
struct rf_pipe {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more;
	uint64_t published;          /* ops the applier may take */
	uint64_t runs;               /* runs as of @published */
	const struct nh_path *paths; /* the path array as of @published */
	bool bad;                    /* a bad line was found: take no more */
	bool done;                   /* the parse ended, with @ret */
	int ret;
	struct errbuf err; /* @ret's message */
	uint64_t parse_ns; /* the parse's, set with @done */

	/* The parser's own. */
	int fd;
	const char *buf;
	size_t len;
	bool full; /* the ops array is full: the file grew while it was read */
	void **old;
	size_t n_old, cap_old;
	uint32_t sort_tmp[2][RF_SORT_CHUNK]; /* rf_order()'s radix passes */
};

/*
 * In a load the parser writes its counts at every op, and the applier
 * reads the options (the claim hook) at every op: each group has cache
 * lines of its own, or every op would move a line between the cores.
 */
#define RF_CACHE_LINE 64

struct routefile {
	struct routefile_opts opts; /* opts.name is owned */

	alignas(RF_CACHE_LINE) struct rf_rec *ops;
	uint64_t n_ops, cap_ops;
	struct rf_run *runs; /* mapped as the ops are: one for each op at most */
	uint64_t n_runs, cap_runs;

	struct nh_path *paths; /* path sets, each stored once */
	uint32_t n_paths, cap_paths;
	struct rf_pathset *sets; /* open addressing, at most half full */
	uint32_t n_sets, cap_sets;
	uint32_t last_start, last_n; /* the last set interned: routes come in runs */

	struct rf_bad *bad;
	uint64_t n_bad, cap_bad; /* n_bad counts all; at most ROUTEFILE_BAD_KEEP kept */
	uint64_t bad_kept;
	char *msgs;
	uint64_t msgs_len, msgs_cap;

	char *carry; /* a line cut by the end of a feed */
	size_t carry_len;
	bool carry_long; /* ... longer than ROUTEFILE_LINE_MAX: its bytes were dropped */

	uint64_t lines;
	uint64_t bytes; /* fed so far */
	bool broken;    /* feeding failed (memory, size, cancelled): the parse is incomplete */
	bool applied;   /* routefile_apply() ran */
	struct rf_ifcache ifc[RF_IFCACHE];
	unsigned int ifc_next;
	struct nh_path scratch[NH_MAX_PATHS]; /* one line's paths */
	struct errbuf err;                    /* one line's message */

	struct rf_pipe *pipe; /* during a load only */
	/*
	 * A load's apply order: the i-th op applied is op i, or, where
	 * sorted[i / RF_PIPE_BATCH] says so, op (i & ~(RF_SORT_CHUNK - 1)) +
	 * order[i]; set by the parser for the ops it publishes (rf_order()),
	 * so that a sorted file touches neither array. in_order: the ops
	 * parsed since the last publication are in key order in each family
	 * (each trie), each at or after the one of its family before.
	 */
	uint32_t *order;
	uint8_t *sorted;     /* for each RF_PIPE_BATCH ops: whether order[] holds theirs */
	uint64_t sent;       /* ops published */
	uint64_t last_of[2]; /* the last op of each family (IPv4, IPv6), plus one */
	bool in_order;
	/* The applier's view of the arrays, apart from the parser's counts. */
	alignas(RF_CACHE_LINE) const struct nh_path *apply_paths;
	const struct rf_rec *apply_ops;
	const uint32_t *apply_order; /* a load's order, or NULL: the ops in turn */
	const uint8_t *apply_sorted;
	const struct rf_run *apply_run;
	uint64_t apply_runs;
	uint64_t run_at;                   /* its last run: most ops come in the file's order */
	uint64_t apply_total;              /* ops in all, as far as it knows (0: not yet) */
	uint64_t parse_ns, waited_ns;      /* a load's: see struct routefile_result */

	/* The apply's undo journal. */
	struct rf_undo *journal;
	uint64_t cap_journal;
	struct rf_side *side;
	uint64_t n_side, cap_side;
};

/*
 * @arr of @size-byte items, grown to hold @need (doubling from @first, so
 * pushes are amortized O(1)); NULL when out of memory, @arr unchanged.
 */
static void *rf_grow(void *arr, uint64_t *cap, uint64_t need, size_t size, uint64_t first)
{
	uint64_t n = *cap ? *cap : first;
	void *p;

	if (need <= *cap)
		return arr;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / size)
		return NULL;
	p = realloc(arr, n * size);
	if (p)
		*cap = n;
	return p;
}

/*
 * Maps @size bytes, zeroed, that will not move: only the pages touched are
 * backed. Also for the load's buffers of megabytes (the read buffer, the
 * parser's state) that malloc would map: once glibc frees a mapped block
 * it serves blocks up to that size from the thread's arena, whose top
 * malloc_trim() does not give back, and lcfibd kept 6 MiB more after each
 * reload of a route file.
 */
static void *rf_big_reserve(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_HUGEPAGE);
	return p;
}

/*
 * The arrays that reach tens of megabytes (a full table's ops, the undo
 * journal) are mapped with huge pages where the kernel allows: in small
 * pages a million ops take 12k page faults, which cost more than parsing
 * them. Growing remaps without copying; untouched capacity costs nothing.
 */
static void *rf_big_resize(void *old, size_t old_size, size_t size)
{
	void *p;

	if (!old)
		return rf_big_reserve(size);
	p = mremap(old, old_size, size, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_HUGEPAGE); /* advice: without it, small pages */
	return p;
}

static void rf_big_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* The ops and their runs; routefile_routes() still counts them. */
static void rf_ops_free(struct routefile *rf)
{
	rf_big_free(rf->ops, rf->cap_ops * sizeof(*rf->ops));
	rf_big_free(rf->runs, rf->cap_runs * sizeof(*rf->runs));
	rf_big_free(rf->order, rf->cap_ops * sizeof(*rf->order));
	rf_big_free(rf->sorted, rf->cap_ops / RF_PIPE_BATCH + 1);
	rf->ops = NULL;
	rf->runs = NULL;
	rf->order = NULL;
	rf->sorted = NULL;
	rf->apply_ops = NULL;
	rf->apply_order = NULL;
	rf->apply_sorted = NULL;
	rf->apply_run = NULL;
	rf->cap_ops = rf->cap_runs = 0;
}

/* The undo journal: an entry per op, mapped for the apply's duration. */
static size_t rf_journal_size(const struct routefile *rf)
{
	return rf->cap_journal * sizeof(*rf->journal);
}

static void rf_journal_free(struct routefile *rf)
{
	rf_big_free(rf->journal, rf_journal_size(rf));
	rf->cap_journal = 0;
	free(rf->side);
	rf->journal = NULL;
	rf->side = NULL;
	rf->n_side = rf->cap_side = 0;
}

/* ---------------------------------------------------------------- tokens */

/* The line being parsed and where the parse stands. */
struct rf_parser {
	const char *line, *p, *end;
	int family;            /* the family prefixes must have, or AF_UNSPEC */
	struct nh_path *paths; /* NH_MAX_PATHS of scratch */
	struct routefile *rf;  /* for its interface cache; NULL: none */
	struct errbuf *err;
	unsigned int col; /* of the error */
};

struct rf_tok {
	const char *s;
	unsigned int len; /* 0: the end of the line, at s */
};

/*
 * printf arguments for "%.*s%s" of a token, cut to RF_QUOTE_MAX bytes with
 * "..." at the cut: messages go to clients and to the log, and a file read
 * by mistake (or by someone who should not) must not come back whole.
 */
#define RF_TOK(t)                                                                                  \
	(int)((t)->len <= RF_QUOTE_MAX ? (t)->len : RF_QUOTE_MAX - 3), (t)->s,                     \
		(t)->len <= RF_QUOTE_MAX ? "" : "..."

enum { RF_WORD, RF_BLANK };

/*
 * What a byte is to the tokenizer: blanks split words. A '#' ends the line
 * only where a word would begin (lcfibd(8)); inside a word it is a byte of
 * the word, so "dev eth#0" names the device "eth#0", not "eth".
 */
static const uint8_t rf_cls[256] = {
	[' '] = RF_BLANK,  ['\t'] = RF_BLANK, ['\r'] = RF_BLANK,
	['\n'] = RF_BLANK, ['\v'] = RF_BLANK, ['\f'] = RF_BLANK,
};

/*
 * Where the word at @p ends: the first blank, or @end. Eight bytes at a
 * time while eight are left before @end: a byte below 0x21 (every blank
 * is one) is found by the carry trick -- the lowest one flagged is right,
 * those above it may not be -- and only such a byte is looked up.
 */
static const char *rf_word_end(const char *p, const char *end)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;

	while (end - p >= 8) {
		uint64_t x, below;

		memcpy(&x, p, sizeof(x));
		x = le64toh(x);
		below = (x - 0x21 * ones) & ~x & highs;
		if (!below) {
			p += 8;
			continue;
		}
		p += __builtin_ctzll(below) / 8;
		if (rf_cls[(uint8_t)*p] == RF_BLANK)
			return p;
		p++; /* a control byte inside the word */
	}
	while (p < end && rf_cls[(uint8_t)*p] != RF_BLANK)
		p++;
	return p;
}

/* The next word in @t; false (and an empty @t where the line ends) at the end. */
static bool rf_next(struct rf_parser *pp, struct rf_tok *t)
{
	const char *p = pp->p, *end = pp->end;

	while (p < end && rf_cls[(uint8_t)*p] == RF_BLANK)
		p++;
	t->s = p;
	if (p == end || *p == '#') {
		t->len = 0;
		pp->p = pp->end = p;
		return false;
	}
	p = rf_word_end(p, end);
	t->len = (unsigned int)(p - t->s);
	pp->p = p;
	return true;
}

/*
 * Whether @t is the word @lit, a string literal (a variable does not
 * compile): its length is known, so there is no strlen() and the compare
 * is inlined. Each line asks it a dozen times of each word.
 */
#define rf_is(t, lit) rf_is_n((t), "" lit "", sizeof("" lit "") - 1)

static inline bool rf_is_n(const struct rf_tok *t, const char *word, size_t n)
{
	return t->len == n && memcmp(t->s, word, n) == 0;
}

static bool rf_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Sets the error's column to @at and its message; returns -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
rf_fail(struct rf_parser *pp, const char *at, const char *fmt, ...)
{
	va_list ap;

	pp->col = (unsigned int)(at - pp->line) + 1;
	if (pp->err) {
		va_start(ap, fmt);
		vsnprintf(pp->err->msg, sizeof(pp->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* "expected WHAT after 'PREV', got 'T'" (or "got end of line"), at @t. */
static int rf_expected(struct rf_parser *pp, const struct rf_tok *t, const struct rf_tok *prev,
		       const char *what)
{
	char after[RF_QUOTE_MAX + 16] = "";

	if (prev && prev->len)
		snprintf(after, sizeof(after), " after '%.*s%s'", RF_TOK(prev));
	if (!t->len)
		return rf_fail(pp, t->s, "expected %s%s, got end of line", what, after);
	return rf_fail(pp, t->s, "expected %s%s, got '%.*s%s'", what, after, RF_TOK(t));
}

/* The value after keyword @kw in @v: a missing one is an error naming @what. */
static int rf_value(struct rf_parser *pp, const struct rf_tok *kw, struct rf_tok *v,
		    const char *what)
{
	if (!rf_next(pp, v))
		return rf_expected(pp, v, kw, what);
	return 0;
}

/* A decimal (or 0x hexadecimal) number up to @max, as iproute2's get_u32 takes. */
static bool rf_number(const struct rf_tok *t, uint32_t max, uint32_t *out)
{
	return names_number(t->s, t->len, max, out);
}

/* ------------------------------------------------------------- addresses */

/*
 * A dotted quad as inet_pton() takes it (four parts, no leading zeros):
 * the common case of a route file, so without a copy or a library call.
 */
static bool rf_ip4(const char *s, const char *end, uint8_t b[4])
{
	for (unsigned int i = 0; i < 4; i++) {
		unsigned int v = 0, nd = 0;

		if (i && (s == end || *s++ != '.'))
			return false;
		for (; s < end && rf_digit(*s) && nd < 3; nd++)
			v = v * 10 + (unsigned int)(*s++ - '0');
		if (!nd || v > 255 || (nd > 1 && s[-(int)nd] == '0'))
			return false;
		b[i] = (uint8_t)v;
	}
	return s == end;
}

/* An address of @family (AF_UNSPEC: either) in @b; its family in *@fam. */
static bool rf_addr(const char *s, const char *end, int family, uint8_t b[16], uint8_t *fam)
{
	char buf[INET6_ADDRSTRLEN];
	size_t n = (size_t)(end - s);

	memset(b, 0, 16);
	if (family != AF_INET6 && rf_ip4(s, end, b)) {
		*fam = AF_INET;
		return true;
	}
	if (family == AF_INET || n >= sizeof(buf) || !memchr(s, ':', n))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, b) != 1)
		return false;
	*fam = AF_INET6;
	return true;
}

static bool rf_host_bits(const uint8_t *b, unsigned int bits, unsigned int plen)
{
	unsigned int i = plen / 8;

	if (plen >= bits)
		return false;
	if (b[i] & (0xffu >> (plen % 8)))
		return true;
	while (++i < bits / 8) {
		if (b[i])
			return true;
	}
	return false;
}

static int rf_host_bits_fail(struct rf_parser *pp, const struct rf_tok *t, const struct rf_op *op)
{
	struct addr_prefix p;
	char buf[ADDR_STRLEN];

	memset(&p, 0, sizeof(p));
	p.a.family = op->family;
	memcpy(p.a.b, op->addr, sizeof(p.a.b));
	p.plen = op->plen;
	addr_mask(&p.a, p.plen);
	addr_prefix_format(&p, buf, sizeof(buf));
	return rf_fail(pp, t->s, "'%.*s%s' has host bits set past /%u (did you mean %s?)",
		       RF_TOK(t), op->plen, buf);
}

/*
 * ADDR/LEN, ADDR (a host prefix) or default/any/all into @op. A default
 * gets the parser's family, or none yet (the caller settles it).
 */
static int rf_prefix(struct rf_parser *pp, const struct rf_tok *t, const struct rf_tok *prev,
		     struct rf_op *op)
{
	const char *end = t->s + t->len, *slash = memchr(t->s, '/', t->len);
	unsigned int bits, plen = 0, nd = 0;
	uint8_t fam;

	op->col = (uint32_t)(t->s - pp->line) + 1;
	if (rf_is(t, "default") || rf_is(t, "any") || rf_is(t, "all")) {
		memset(op->addr, 0, sizeof(op->addr));
		op->family = (uint8_t)pp->family;
		op->plen = 0;
		return 0;
	}
	if (!rf_addr(t->s, slash ? slash : end, AF_UNSPEC, op->addr, &fam))
		return rf_expected(pp, t, prev, "a prefix");
	if (pp->family && fam != pp->family)
		return rf_expected(pp, t, prev,
				   pp->family == AF_INET ? "an IPv4 prefix" : "an IPv6 prefix");
	bits = fam == AF_INET ? 32 : 128;
	if (slash) {
		const char *s = slash + 1;

		for (; s < end && rf_digit(*s) && nd < 3; nd++)
			plen = plen * 10 + (unsigned int)(*s - '0'), s++;
		if (!nd || s != end || plen > bits)
			return rf_fail(pp, slash + 1,
				       "expected a prefix length 0..%u after '/' in '%.*s%s'", bits,
				       RF_TOK(t));
	} else {
		plen = bits;
	}
	op->family = fam;
	op->plen = (uint8_t)plen;
	if (rf_host_bits(op->addr, bits, plen))
		return rf_host_bits_fail(pp, t, op);
	return 0;
}

/* The ifindex of the name in @t: remembered for a file, since if_nametoindex() is a syscall. */
static int rf_ifindex(struct rf_parser *pp, const struct rf_tok *kw, const struct rf_tok *t,
		      uint32_t *ifindex)
{
	struct routefile *rf = pp->rf;
	char name[IF_NAMESIZE];
	int ret;

	if (t->len >= IF_NAMESIZE)
		return rf_expected(pp, t, kw, "an interface name of 1 to 15 characters");
	memcpy(name, t->s, t->len);
	name[t->len] = '\0';
	for (unsigned int i = 0; rf && i < RF_IFCACHE; i++) {
		if (rf->ifc[i].ifindex && strcmp(rf->ifc[i].name, name) == 0) {
			*ifindex = rf->ifc[i].ifindex;
			return 0;
		}
	}
	ret = ifname_resolve(name, ifindex, pp->err);
	if (ret) {
		pp->col = (unsigned int)(t->s - pp->line) + 1;
		return ret == -ENOMEM ? ret : -EINVAL;
	}
	if (rf) {
		struct rf_ifcache *c = &rf->ifc[rf->ifc_next++ % RF_IFCACHE];

		memcpy(c->name, name, sizeof(name));
		c->ifindex = *ifindex;
	}
	return 0;
}

/* ----------------------------------------------------------- plain lines */

/* A gateway of the prefix's family in @path. */
static int rf_gateway(struct rf_parser *pp, const struct rf_tok *t, const struct rf_tok *prev,
		      int family, struct nh_path *path)
{
	uint8_t fam;

	if (!rf_addr(t->s, t->s + t->len, family, (uint8_t *)&path->gw, &fam))
		return rf_expected(pp, t, prev,
				   family == AF_INET    ? "an IPv4 gateway"
				   : family == AF_INET6 ? "an IPv6 gateway"
							: "a gateway address");
	path->gw_family = fam;
	return 0;
}

static void rf_path_init(struct nh_path *path)
{
	memset(path, 0, sizeof(*path));
	path->weight = 1;
}

/* PREFIX [GATEWAY] [dev IF]: an add; with neither gateway nor device, a blackhole. */
/* An IPv6 add of metric 0 gets the kernel's 1024 (ip6_route_info_create), given or not. */
static void rf_metric6(struct rf_op *op)
{
	if (op->family == AF_INET6 && !(op->kind & RF_OP_DEL) && !op->metric)
		op->metric = ROUTEFILE_METRIC6;
}

static int rf_parse_plain(struct rf_parser *pp, const struct rf_tok *first, struct rf_op *op)
{
	struct nh_path *path = &pp->paths[0];
	struct rf_tok t, prev = *first;
	int ret;

	ret = rf_prefix(pp, first, NULL, op);
	if (ret)
		return ret;
	op->flags = FIB_F_CREATE | FIB_F_EXCL;
	op->proto = ROUTEFILE_PROTO_BOOT;
	op->type = FIB_RT_BLACKHOLE;
	if (!rf_next(pp, &t))
		goto done;
	rf_path_init(path);
	op->type = FIB_RT_UNICAST;
	op->n_paths = 1;
	if (!rf_is(&t, "dev")) {
		ret = rf_gateway(pp, &t, &prev, op->family, path);
		if (ret)
			return ret;
		prev = t;
		if (!rf_next(pp, &t))
			goto done;
		if (!rf_is(&t, "dev"))
			return rf_expected(pp, &t, &prev, "'dev' or end of line");
	}
	prev = t;
	ret = rf_value(pp, &prev, &t, "an interface name");
	if (!ret)
		ret = rf_ifindex(pp, &prev, &t, &path->ifindex);
	if (ret)
		return ret;
	prev = t;
	if (rf_next(pp, &t))
		return rf_expected(pp, &t, &prev, "end of line");
done:
	if (!op->family)
		op->family = op->n_paths && path->gw_family ? path->gw_family : AF_INET;
	rf_metric6(op);
	return 0;
}

/* ----------------------------------------------------------- batch lines */

/* Keywords a line may give once. */
enum {
	RF_SEEN_PREFIX = 1 << 0,
	RF_SEEN_TYPE = 1 << 1,
	RF_SEEN_METRIC = 1 << 2,
	RF_SEEN_TABLE = 1 << 3,
	RF_SEEN_PROTO = 1 << 4,
	RF_SEEN_SCOPE = 1 << 5,
	RF_SEEN_NHID = 1 << 6,
	RF_SEEN_VIA = 1 << 7, /* these three: of the route's own path, or of a nexthop */
	RF_SEEN_DEV = 1 << 8,
	RF_SEEN_WEIGHT = 1 << 9,
};

/* Where a batch line's attributes stand. */
struct rf_attrs {
	unsigned int seen;    /* route-level RF_SEEN_* */
	unsigned int nh_seen; /* the current nexthop's */
	bool multipath;       /* a 'nexthop' came: via/dev/weight/onlink are a nexthop's */
	bool own_path;        /* the route's own via/dev/onlink made paths[0] */
	struct rf_tok type_tok, nh_tok, last;
	/* Per path: where its 'nexthop' and gateway were, and whether 'via inet6' said its family.
	 */
	const char *nh_at[NH_MAX_PATHS];
	const char *gw_at[NH_MAX_PATHS];
	bool gw_named[NH_MAX_PATHS];
};

/* Numbers without names, for rf_attr_value(). */
static const struct names_entry rf_no_names[] = { { NULL, 0 } };
static const struct names rf_metric = { "a metric 0..4294967295", UINT32_MAX, rf_no_names };
static const struct names rf_nhid = { "a nexthop id", UINT32_MAX, rf_no_names };

/* Attributes of `ip route` this FIB does not model: refused, not dropped. */
static const char *const rf_unsupported[] = {
	"src",      "from",          "mtu",
	"advmss",   "hoplimit",      "realm",
	"realms",   "expires",       "rtt",
	"rttvar",   "rto_min",       "reordering",
	"window",   "cwnd",          "ssthresh",
	"initcwnd", "initrwnd",      "features",
	"quickack", "congctl",       "pref",
	"encap",    "tos",           "dsfield",
	"lock",     "ttl-propagate", "fastopen_no_cookie",
	"mpath",    "equalize",      "notify",
};

static bool rf_is_unsupported(const struct rf_tok *t)
{
	for (size_t i = 0; i < sizeof(rf_unsupported) / sizeof(rf_unsupported[0]); i++) {
		const char *w = rf_unsupported[i];

		/* The first letter tells most apart: this is asked of each line's route type. */
		if (t->len && w[0] == t->s[0] && strlen(w) == t->len &&
		    memcmp(w, t->s, t->len) == 0)
			return true;
	}
	return false;
}

static int rf_once(struct rf_parser *pp, unsigned int *seen, unsigned int bit,
		   const struct rf_tok *kw)
{
	if (*seen & bit)
		return rf_fail(pp, kw->s, "'%.*s%s' is given twice", RF_TOK(kw));
	*seen |= bit;
	return 0;
}

/* A route-level number or name (lib/names.h) after @kw. */
static int rf_attr_value(struct rf_parser *pp, struct rf_attrs *a, unsigned int bit,
			 const struct rf_tok *kw, const struct names *names, uint32_t *out)
{
	struct rf_tok v;
	int ret = rf_once(pp, &a->seen, bit, kw);

	if (!ret)
		ret = rf_value(pp, kw, &v, names->what);
	if (!ret && !names_parse(names, v.s, v.len, out))
		ret = rf_expected(pp, &v, kw, names->what);
	if (!ret)
		a->last = v;
	return ret;
}

/* The path that via/dev/onlink at @kw apply to: the current nexthop's, or the route's own. */
static int rf_cur_path(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
		       const struct rf_tok *kw, unsigned int *i)
{
	if (!a->multipath && !a->own_path) {
		if (a->seen & RF_SEEN_NHID)
			return rf_fail(pp, kw->s, "'%.*s%s' cannot be combined with 'nhid'",
				       RF_TOK(kw));
		rf_path_init(&pp->paths[0]);
		op->n_paths = 1;
		a->own_path = true;
		a->nh_seen = 0;
	}
	*i = op->n_paths - 1u;
	return 0;
}

/* via [inet|inet6] GW */
static int rf_attr_via(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
		       const struct rf_tok *kw)
{
	struct rf_tok v, prev = *kw;
	int family = AF_UNSPEC;
	unsigned int i;
	int ret;

	ret = rf_cur_path(pp, a, op, kw, &i);
	if (!ret)
		ret = rf_once(pp, &a->nh_seen, RF_SEEN_VIA, kw);
	if (!ret)
		ret = rf_value(pp, kw, &v, "a gateway address");
	if (ret)
		return ret;
	if (rf_is(&v, "inet") || rf_is(&v, "inet6")) {
		family = v.len == 4 ? AF_INET : AF_INET6;
		prev = v;
		ret = rf_value(pp, &prev, &v,
			       family == AF_INET ? "an IPv4 address" : "an IPv6 address");
		if (ret)
			return ret;
	}
	ret = rf_gateway(pp, &v, &prev, family, &pp->paths[i]);
	if (ret)
		return ret;
	a->gw_at[i] = v.s;
	a->gw_named[i] = family != AF_UNSPEC;
	a->last = v;
	return 0;
}

static int rf_attr_dev(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
		       const struct rf_tok *kw)
{
	struct rf_tok v;
	unsigned int i;
	int ret;

	ret = rf_cur_path(pp, a, op, kw, &i);
	if (!ret)
		ret = rf_once(pp, &a->nh_seen, RF_SEEN_DEV, kw);
	if (!ret)
		ret = rf_value(pp, kw, &v, "an interface name");
	if (!ret)
		ret = rf_ifindex(pp, kw, &v, &pp->paths[i].ifindex);
	if (!ret)
		a->last = v;
	return ret;
}

static int rf_attr_onlink(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
			  const struct rf_tok *kw)
{
	unsigned int i;
	int ret = rf_cur_path(pp, a, op, kw, &i);

	if (!ret)
		pp->paths[i].flags |= NH_F_ONLINK;
	return ret;
}

static int rf_attr_weight(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
			  const struct rf_tok *kw)
{
	struct rf_tok v;
	uint32_t w;
	int ret;

	if (!a->multipath)
		return rf_fail(pp, kw->s, "'weight' belongs to a 'nexthop'");
	ret = rf_once(pp, &a->nh_seen, RF_SEEN_WEIGHT, kw);
	if (!ret)
		ret = rf_value(pp, kw, &v, "a weight 1..256");
	if (ret)
		return ret;
	if (!rf_number(&v, 256, &w) || w == 0)
		return rf_expected(pp, &v, kw, "a weight 1..256");
	pp->paths[op->n_paths - 1].weight = (uint16_t)w;
	a->last = v;
	return 0;
}

/* A nexthop must say where it goes. */
static int rf_nexthop_check(struct rf_parser *pp, struct rf_attrs *a)
{
	if (a->multipath && !(a->nh_seen & (RF_SEEN_VIA | RF_SEEN_DEV)))
		return rf_fail(pp, a->nh_tok.s, "expected 'via' or 'dev' in this 'nexthop'");
	return 0;
}

static int rf_attr_nexthop(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
			   const struct rf_tok *kw)
{
	int ret;

	if (a->own_path)
		return rf_fail(pp, kw->s, "'nexthop' cannot follow the route's own 'via' or 'dev'");
	if (a->seen & RF_SEEN_NHID)
		return rf_fail(pp, kw->s, "'nexthop' cannot be combined with 'nhid'");
	ret = rf_nexthop_check(pp, a);
	if (ret)
		return ret;
	if (op->n_paths == NH_MAX_PATHS)
		return rf_fail(pp, kw->s, "more than %u nexthops", NH_MAX_PATHS);
	a->nh_at[op->n_paths] = kw->s;
	rf_path_init(&pp->paths[op->n_paths++]);
	a->multipath = true;
	a->nh_seen = 0;
	a->nh_tok = *kw;
	return 0;
}

static int rf_attr_nhid(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
			const struct rf_tok *kw)
{
	int ret;

	if (op->n_paths)
		return rf_fail(pp, kw->s,
			       "'nhid' cannot be combined with 'via', 'dev' or 'nexthop'");
	ret = rf_attr_value(pp, a, RF_SEEN_NHID, kw, &rf_nhid, &op->nh);
	if (ret)
		return ret;
	if (!op->nh)
		return rf_expected(pp, &a->last, kw, "a nexthop id 1..4294967295");
	op->kind |= RF_OP_NHID;
	return 0;
}

/* The keywords of the route itself; 1 when @kw is none of them. */
static int rf_attr(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
		   const struct rf_tok *kw)
{
	uint32_t v;
	int ret;

	if (rf_is(kw, "via"))
		return rf_attr_via(pp, a, op, kw);
	if (rf_is(kw, "dev") || rf_is(kw, "oif"))
		return rf_attr_dev(pp, a, op, kw);
	if (rf_is(kw, "metric") || rf_is(kw, "preference") || rf_is(kw, "priority"))
		return rf_attr_value(pp, a, RF_SEEN_METRIC, kw, &rf_metric, &op->metric);
	if (rf_is(kw, "table"))
		return rf_attr_value(pp, a, RF_SEEN_TABLE, kw, &names_table, &op->table);
	if (rf_is(kw, "proto") || rf_is(kw, "protocol")) {
		ret = rf_attr_value(pp, a, RF_SEEN_PROTO, kw, &names_proto, &v);
		op->proto = (uint8_t)v;
		return ret;
	}
	if (rf_is(kw, "scope")) {
		ret = rf_attr_value(pp, a, RF_SEEN_SCOPE, kw, &names_scope, &v);
		op->scope = (uint8_t)v;
		return ret;
	}
	if (rf_is(kw, "onlink"))
		return rf_attr_onlink(pp, a, op, kw);
	if (rf_is(kw, "weight"))
		return rf_attr_weight(pp, a, op, kw);
	if (rf_is(kw, "nexthop"))
		return rf_attr_nexthop(pp, a, op, kw);
	if (rf_is(kw, "nhid"))
		return rf_attr_nhid(pp, a, op, kw);
	return 1;
}

static bool rf_rtype(const struct rf_tok *t, uint8_t *type)
{
	uint32_t v;

	if (!names_lookup(&names_rtype, t->s, t->len, &v))
		return false;
	*type = (uint8_t)v;
	return true;
}

/* [TYPE] PREFIX after 'to', or a word where the prefix may be. */
static int rf_attr_prefix(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op,
			  struct rf_tok *t, const struct rf_tok *prev)
{
	struct rf_tok before = *prev;
	int ret;

	/* No type begins with a digit, as every IPv4 prefix and most IPv6 ones do. */
	if (!(a->seen & RF_SEEN_TYPE) && !rf_digit(t->s[0]) && rf_rtype(t, &op->type)) {
		a->seen |= RF_SEEN_TYPE;
		a->type_tok = *t;
		before = *t;
		rf_next(pp, t);
	}
	if (a->seen & RF_SEEN_PREFIX)
		return rf_fail(pp, t->s, "a second prefix '%.*s%s'", RF_TOK(t));
	ret = rf_prefix(pp, t, &before, op);
	if (ret)
		return ret;
	a->seen |= RF_SEEN_PREFIX;
	a->last = *t;
	return 0;
}

/* Gateways of the other family: an IPv4 route may use 'via inet6' (RFC 5549), nothing else. */
static int rf_check_gateways(struct rf_parser *pp, const struct rf_attrs *a, struct rf_op *op)
{
	for (unsigned int i = 0; i < op->n_paths; i++) {
		const struct nh_path *p = &pp->paths[i];

		if (!p->gw_family || p->gw_family == op->family)
			continue;
		if (op->family == AF_INET && a->gw_named[i])
			continue;
		if (op->family == AF_INET)
			return rf_fail(pp, a->gw_at[i],
				       "an IPv6 gateway for an IPv4 route needs 'via inet6'");
		return rf_fail(pp, a->gw_at[i], "an IPv4 gateway for an IPv6 route");
	}
	return 0;
}

/*
 * An IPv6 multipath route is one gateway route per nexthop to the kernel
 * (siblings): it refuses a nexthop without a gateway, or one given twice.
 */
static int rf_check_siblings(struct rf_parser *pp, const struct rf_attrs *a, struct rf_op *op)
{
	if (op->family != AF_INET6 || !a->multipath)
		return 0;
	for (unsigned int i = 0; i < op->n_paths; i++) {
		if (!pp->paths[i].gw_family)
			return rf_fail(pp, a->nh_at[i],
				       "an IPv6 'nexthop' needs 'via' (the kernel refuses "
				       "device-only nexthops in an IPv6 multipath route)");
		for (unsigned int j = 0; j < i; j++) {
			if (nh_path_same(&pp->paths[i], &pp->paths[j]))
				return rf_fail(pp, a->nh_at[i], "the same 'nexthop' as nexthop %u",
					       j + 1);
		}
	}
	return 0;
}

/* What a whole line must make sense as: its family, gateways, and type. */
static int rf_batch_finish(struct rf_parser *pp, struct rf_attrs *a, struct rf_op *op)
{
	const struct rf_tok end = { pp->end, 0 };
	int ret = rf_nexthop_check(pp, a);

	if (ret)
		return ret;
	if (!(a->seen & RF_SEEN_PREFIX))
		return rf_expected(pp, &end, &a->last, "a prefix");
	/* A default without -4/-6 has its first gateway's family, as iproute2 gives it. */
	if (!op->family)
		op->family =
			op->n_paths && pp->paths[0].gw_family ? pp->paths[0].gw_family : AF_INET;
	ret = rf_check_gateways(pp, a, op);
	if (ret || (op->kind & RF_OP_DEL))
		return ret;
	rf_metric6(op);
	if (op->n_paths && !pp->paths[op->n_paths - 1].gw_family &&
	    !pp->paths[op->n_paths - 1].ifindex)
		return rf_fail(pp, end.s, "expected 'via' or 'dev' for 'onlink'");
	ret = rf_check_siblings(pp, a, op);
	if (ret)
		return ret;
	if (op->type >= FIB_RT_BLACKHOLE && (op->n_paths || (op->kind & RF_OP_NHID)))
		return rf_fail(pp, a->type_tok.s, "a %.*s%s route takes no 'via', 'dev' or nexthop",
			       RF_TOK(&a->type_tok));
	if (op->type <= FIB_RT_UNICAST && !op->n_paths && !(op->kind & RF_OP_NHID))
		return rf_expected(pp, &end, &a->last,
				   "'via', 'dev', 'nexthop' or 'nhid' for a unicast route");
	if (!op->type)
		op->type = FIB_RT_UNICAST;
	if (!(a->seen & RF_SEEN_PROTO))
		op->proto = ROUTEFILE_PROTO_BOOT;
	return 0;
}

static int rf_batch_attrs(struct rf_parser *pp, const struct rf_tok *cmd, struct rf_op *op)
{
	struct rf_attrs a;
	struct rf_tok t;
	int ret;

	a.seen = a.nh_seen = 0;
	a.multipath = a.own_path = false;
	a.last = *cmd;
	while (rf_next(pp, &t)) {
		struct rf_tok prev = a.last;

		a.last = t;
		ret = rf_attr(pp, &a, op, &t);
		if (ret <= 0) {
			if (ret)
				return ret;
			continue;
		}
		if (rf_is(&t, "to")) {
			prev = t;
			if (!rf_next(pp, &t))
				return rf_expected(pp, &t, &prev, "a prefix");
			ret = rf_attr_prefix(pp, &a, op, &t, &prev);
		} else if (!(a.seen & RF_SEEN_PREFIX)) {
			/*
			 * The type and the prefix of nearly every line: the list of
			 * what is not supported is looked at only when they fail.
			 */
			ret = rf_attr_prefix(pp, &a, op, &t, &prev);
			if (ret == -EINVAL && rf_is_unsupported(&t))
				return rf_fail(pp, t.s, "'%.*s%s' is not supported", RF_TOK(&t));
		} else if (rf_is_unsupported(&t)) {
			return rf_fail(pp, t.s, "'%.*s%s' is not supported", RF_TOK(&t));
		} else {
			return rf_expected(pp, &t, &prev,
					   "a route attribute (via, dev, metric, table, proto, "
					   "scope, onlink, nexthop, nhid)");
		}
		if (ret)
			return ret;
	}
	return rf_batch_finish(pp, &a, op);
}

/* An `ip route` command: an operation of lib/names.h (its FIB_F_* in @flags), or del/delete. */
static bool rf_cmd_find(const struct rf_tok *t, uint32_t *flags, uint8_t *kind)
{
	*flags = 0;
	*kind = rf_is(t, "del") || rf_is(t, "delete") ? RF_OP_DEL : 0;
	return *kind || names_lookup(&names_route_op, t->s, t->len, flags);
}

/* 'route' as iproute2 abbreviates it. */
static bool rf_is_route_word(const struct rf_tok *t)
{
	static const char route[] = "route";

	if (t->len < 1 || t->len > 5)
		return false;
	for (unsigned int i = 0; i < t->len; i++)
		if (t->s[i] != route[i])
			return false;
	return true;
}

/* Whether the first word of a line makes it a batch line (the auto format). */
static bool rf_is_batch_word(const struct rf_tok *t)
{
	uint32_t flags;
	uint8_t kind;

	if (t->len < 2 || rf_digit(t->s[0]))
		return false;
	return rf_is(t, "ip") || rf_is_route_word(t) || rf_is(t, "-4") || rf_is(t, "-6") ||
	       rf_cmd_find(t, &flags, &kind);
}

static int rf_family_opt(struct rf_parser *pp, const struct rf_tok *t)
{
	int family = t->s[1] == '4' ? AF_INET : AF_INET6;

	if (pp->family && pp->family != family)
		return rf_fail(pp, t->s, "'%.*s%s' contradicts the family given before", RF_TOK(t));
	pp->family = family;
	return 0;
}

/* [ip] [-4|-6] [route] CMD ATTRS... */
static int rf_parse_batch(struct rf_parser *pp, const struct rf_tok *first, struct rf_op *op)
{
	struct rf_tok t = *first, prev = { first->s, 0 };
	uint32_t flags;
	bool ip = rf_is(&t, "ip");
	int ret;

	if (ip) {
		prev = t;
		rf_next(pp, &t);
	}
	while (rf_is(&t, "-4") || rf_is(&t, "-6")) {
		ret = rf_family_opt(pp, &t);
		if (ret)
			return ret;
		prev = t;
		rf_next(pp, &t);
	}
	if (t.len && rf_is_route_word(&t)) {
		prev = t;
		rf_next(pp, &t);
	} else if (ip) {
		return rf_expected(pp, &t, &prev, "'route'");
	}
	if (!rf_cmd_find(&t, &flags, &op->kind))
		return rf_expected(pp, &t, &prev,
				   "a command (add, del, replace, append, prepend, change)");
	op->flags = (uint8_t)flags;
	return rf_batch_attrs(pp, &t, op);
}

static void rf_parser_init(struct rf_parser *pp, const char *s, size_t len, int family,
			   struct nh_path *paths, struct routefile *rf, struct errbuf *err)
{
	pp->line = pp->p = s;
	pp->end = s + len;
	pp->family = family;
	pp->paths = paths;
	pp->rf = rf;
	pp->err = err;
	pp->col = 0;
}

/* One line into @op (zeroed by the caller); -ENODATA when it holds nothing. */
static int rf_parse_line(struct rf_parser *pp, enum routefile_format format, struct rf_op *op)
{
	struct rf_tok t;

	if (!rf_next(pp, &t))
		return -ENODATA;
	if (format == ROUTEFILE_BATCH || (format == ROUTEFILE_AUTO && rf_is_batch_word(&t)))
		return rf_parse_batch(pp, &t, op);
	return rf_parse_plain(pp, &t, op);
}

/* @op as the ops array holds it (its line, column and table go to a run). */
static void rf_rec_pack(const struct rf_op *op, struct rf_rec *rec)
{
	memcpy(rec->addr, op->addr, sizeof(rec->addr));
	rec->metric = op->metric;
	rec->nh = op->nh;
	rec->family = op->family;
	rec->plen = op->plen;
	rec->type = op->type;
	rec->proto = op->proto;
	rec->scope = op->scope;
	rec->n_paths = op->n_paths;
	rec->flags = op->flags;
	rec->kind = op->kind;
}

static void rf_rec_rcfg(const struct rf_rec *rec, uint32_t table, const struct nh_path *paths,
			struct fib_rcfg *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->dst.a.family = rec->family;
	memcpy(rc->dst.a.b, rec->addr, sizeof(rec->addr));
	rc->dst.plen = rec->plen;
	rc->table = table;
	rc->type = rec->type;
	rc->proto = rec->proto;
	rc->scope = rec->scope;
	rc->metric = rec->metric;
	rc->flags = rec->flags;
	if (rec->kind & RF_OP_NHID) {
		rc->nh_id = rec->nh;
	} else if (rec->n_paths) {
		rc->n_paths = rec->n_paths;
		rc->paths = paths;
	}
}

int routefile_parse_route(const char *line, int family, struct routefile_route *out,
			  unsigned int *col, struct errbuf *err)
{
	struct rf_parser pp;
	struct rf_op op;
	struct rf_rec rec;
	int ret;

	if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6) {
		err_set(err, "address family %d is neither IPv4 nor IPv6", family);
		return -EINVAL;
	}
	memset(&op, 0, sizeof(op));
	rf_parser_init(&pp, line, strlen(line), family, out->paths, NULL, err);
	ret = rf_parse_line(&pp, ROUTEFILE_BATCH, &op);
	if (ret == -ENODATA)
		return ret;
	if (ret) {
		if (col)
			*col = pp.col;
		err_prefix(err, "column %u", pp.col);
		return ret;
	}
	out->op = (op.kind & RF_OP_DEL) ? ROUTEFILE_DEL : ROUTEFILE_ADD;
	rf_rec_pack(&op, &rec);
	rf_rec_rcfg(&rec, op.table, out->paths, &out->rc);
	return 0;
}

/* ------------------------------------------------------------- the file */

struct routefile *routefile_new(const struct routefile_opts *o)
{
	struct routefile *rf;

	if (o->format > ROUTEFILE_PLAIN ||
	    (o->family != AF_UNSPEC && o->family != AF_INET && o->family != AF_INET6)) {
		errno = EINVAL;
		return NULL;
	}
	rf = aligned_alloc(alignof(struct routefile), sizeof(*rf));
	if (!rf)
		goto nomem;
	memset(rf, 0, sizeof(*rf));
	rf->opts = *o;
	rf->opts.name = strdup(o->name ? o->name : "-");
	if (!rf->opts.name)
		goto free_rf;
	return rf;
free_rf:
	free(rf);
nomem:
	errno = ENOMEM;
	return NULL;
}

void routefile_free(struct routefile *rf)
{
	if (!rf)
		return;
	free((char *)rf->opts.name);
	rf_ops_free(rf);
	free(rf->paths);
	free(rf->sets);
	free(rf->bad);
	free(rf->msgs);
	free(rf->carry);
	rf_journal_free(rf);
	free(rf);
}

uint64_t routefile_lines(const struct routefile *rf)
{
	return rf->lines;
}

uint64_t routefile_routes(const struct routefile *rf)
{
	return rf->n_ops;
}

uint64_t routefile_bad_lines(const struct routefile *rf)
{
	return rf->n_bad;
}

int routefile_bad_line(const struct routefile *rf, uint64_t i, uint64_t *line, unsigned int *col,
		       const char **msg)
{
	if (i >= rf->bad_kept)
		return -ENOENT;
	if (line)
		*line = rf->bad[i].line;
	if (col)
		*col = rf->bad[i].col;
	if (msg)
		*msg = rf->msgs + rf->bad[i].msg;
	return 0;
}

/*
 * A load's parser: what it parsed so far is the applier's to take; @done,
 * the parse ended with @ret and @err (in the same step, so the applier
 * never sees the end before the last ops).
 */
static void rf_pipe_publish(struct routefile *rf, bool done, int ret, const struct errbuf *err)
{
	struct rf_pipe *pp = rf->pipe;

	pthread_mutex_lock(&pp->lock);
	pp->published = rf->n_ops;
	pp->runs = rf->n_runs;
	pp->paths = rf->paths;
	pp->bad = rf->n_bad > 0;
	if (done) {
		pp->ret = ret;
		pp->err = *err;
		pp->done = true;
	}
	pthread_cond_signal(&pp->more);
	pthread_mutex_unlock(&pp->lock);
}

/*
 * Records a bad line: "NAME:LINE:COL: @what" (":COL" when @col > 0). Past
 * ROUTEFILE_BAD_KEEP only counts it. Returns 0 or -ENOMEM.
 */
static int rf_bad_add(struct routefile *rf, uint64_t line, unsigned int col, const char *what)
{
	size_t need = strlen(rf->opts.name) + strlen(what) + 48;
	struct rf_bad *b;
	char *m;

	/* A load's applier stops at once: nothing will be applied. */
	if (rf->n_bad++ == 0 && rf->pipe)
		rf_pipe_publish(rf, false, 0, NULL);
	if (rf->bad_kept == ROUTEFILE_BAD_KEEP)
		return 0;
	b = rf_grow(rf->bad, &rf->cap_bad, rf->bad_kept + 1, sizeof(*rf->bad), 64);
	if (!b)
		return -ENOMEM;
	rf->bad = b;
	m = rf_grow(rf->msgs, &rf->msgs_cap, rf->msgs_len + need, 1, 4096);
	if (!m)
		return -ENOMEM;
	rf->msgs = m;
	b = &rf->bad[rf->bad_kept++];
	b->line = line;
	b->col = col;
	b->msg = (uint32_t)rf->msgs_len;
	m = rf->msgs + rf->msgs_len;
	if (col)
		rf->msgs_len += (uint64_t)snprintf(m, need, "%s:%" PRIu64 ":%u: %s", rf->opts.name,
						   line, col, what);
	else
		rf->msgs_len += (uint64_t)snprintf(m, need, "%s:%" PRIu64 ": %s", rf->opts.name,
						   line, what);
	rf->msgs_len++;
	return 0;
}

static uint32_t rf_paths_hash(const struct nh_path *p, unsigned int n)
{
	const unsigned char *b = (const void *)p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i + 8 <= n * sizeof(*p); i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ h >> 32);
}

static struct rf_pathset *rf_set_slot(const struct routefile *rf, const struct nh_path *p,
				      unsigned int n, uint32_t hash)
{
	uint32_t mask = rf->cap_sets - 1, i = hash & mask;

	for (;; i = (i + 1) & mask) {
		struct rf_pathset *s = &rf->sets[i];

		if (!s->n || (s->hash == hash && s->n == n &&
			      memcmp(rf->paths + s->start, p, n * sizeof(*p)) == 0))
			return s;
	}
}

static int rf_sets_grow(struct routefile *rf)
{
	uint32_t cap = rf->cap_sets ? 2 * rf->cap_sets : 64;
	struct rf_pathset *old = rf->sets;
	uint32_t old_cap = rf->cap_sets;

	rf->sets = calloc(cap, sizeof(*rf->sets));
	if (!rf->sets) {
		rf->sets = old;
		return -ENOMEM;
	}
	rf->cap_sets = cap;
	for (uint32_t i = 0; i < old_cap; i++) {
		if (old[i].n)
			*rf_set_slot(rf, rf->paths + old[i].start, old[i].n, old[i].hash) = old[i];
	}
	free(old);
	return 0;
}

/*
 * rf->paths, grown to hold @need paths. During a load the applier may
 * still read the old array: it is kept until the load ends, not moved.
 */
static struct nh_path *rf_paths_grow(struct routefile *rf, uint64_t *cap, uint64_t need)
{
	struct rf_pipe *pp = rf->pipe;
	uint64_t n = 0;
	struct nh_path *np;

	if (!pp || need <= *cap)
		return rf_grow(rf->paths, cap, need, sizeof(*rf->paths), 64);
	if (pp->n_old == pp->cap_old) {
		void **old = rf_grow(pp->old, &pp->cap_old, pp->n_old + 1, sizeof(*old), 16);

		if (!old)
			return NULL;
		pp->old = old;
	}
	np = rf_grow(NULL, &n, need, sizeof(*np), *cap ? 2 * *cap : 64);
	if (!np)
		return NULL;
	if (rf->n_paths)
		memcpy(np, rf->paths, rf->n_paths * sizeof(*np));
	if (rf->paths)
		pp->old[pp->n_old++] = rf->paths;
	*cap = n;
	return np;
}

/* Where the path set @p is kept (stored now if new): equal sets share one copy. */
static int rf_paths_intern(struct routefile *rf, const struct nh_path *p, unsigned int n,
			   uint32_t *start)
{
	struct rf_pathset *s;
	struct nh_path *np;
	uint64_t cap = rf->cap_paths;
	uint32_t hash;
	int ret;

	if (rf->last_n == n && memcmp(rf->paths + rf->last_start, p, n * sizeof(*p)) == 0) {
		*start = rf->last_start;
		return 0;
	}
	if (2 * (rf->n_sets + 1) > rf->cap_sets) {
		ret = rf_sets_grow(rf);
		if (ret)
			return ret;
	}
	hash = rf_paths_hash(p, n);
	s = rf_set_slot(rf, p, n, hash);
	if (!s->n) {
		if ((uint64_t)rf->n_paths + n >= RF_NONE)
			return -ENOMEM;
		np = rf_paths_grow(rf, &cap, rf->n_paths + n);
		if (!np)
			return -ENOMEM;
		rf->paths = np;
		rf->cap_paths = (uint32_t)cap;
		memcpy(rf->paths + rf->n_paths, p, n * sizeof(*p));
		s->start = rf->n_paths;
		s->hash = hash;
		s->n = n;
		rf->n_paths += n;
		rf->n_sets++;
	}
	rf->last_start = s->start;
	rf->last_n = n;
	*start = s->start;
	return 0;
}

/* Room for one more in the mapped array @arr of @size-byte items (see rf_big_resize()). */
static int rf_big_grow(void **arr, uint64_t *cap, uint64_t n, size_t size)
{
	uint64_t want = *cap ? 2 * *cap : RF_OPS_FIRST;
	void *p;

	if (n < *cap)
		return 0;
	if (want > SIZE_MAX / size)
		return -ENOMEM;
	p = rf_big_resize(*arr, *cap * size, want * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = want;
	return 0;
}

/* Whether @op goes on in the last run (the next line, the same column and table). */
static bool rf_run_goes_on(const struct routefile *rf, const struct rf_op *op)
{
	const struct rf_run *r = rf->n_runs ? &rf->runs[rf->n_runs - 1] : NULL;

	return r && r->col == op->col && r->table == op->table &&
	       r->line + (rf->n_ops - r->op) == op->line;
}

/* Key order: the family, then the address (bytes in network order). */
static int rf_rec_cmp(const struct rf_rec *a, const struct rf_rec *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* Byte @d of an op's key: 0 the family, 1 to 16 the address. */
static unsigned int rf_rec_byte(const struct rf_rec *r, unsigned int d)
{
	return d ? r->addr[d - 1] : r->family;
}

/*
 * Sets the apply order of ops [@lo, @hi) of a load, which lie in one
 * chunk of RF_SORT_CHUNK ops: nothing to set where they are in key order
 * (they apply as parsed), else sorted by key, stably, so that the ops of
 * one key keep the file's order. Bulk mode loads sorted input faster than
 * shuffled input: each chunk of a shuffled file is then a sorted run, and
 * a shuffled full view loads a quarter faster (docs/BENCHMARKS.md, issue
 * 9's sixteenth round).
 * A radix sort, least significant byte first, skipping the bytes all the
 * ops share (IPv4's last twelve).
 */
static void rf_order(struct routefile *rf, uint64_t lo, uint64_t hi)
{
	uint64_t base = lo & ~(uint64_t)(RF_SORT_CHUNK - 1);
	const struct rf_rec *ops = rf->ops + base;
	uint32_t *a = rf->pipe->sort_tmp[0], *b = rf->pipe->sort_tmp[1], *t;
	size_t n = hi - lo;

	if (rf->in_order)
		return;
	for (size_t k = 0; k < n; k++)
		a[k] = (uint32_t)(lo - base + k);
	for (unsigned int d = sizeof(ops->addr) + 1; d-- > 0;) {
		size_t count[256] = { 0 }, at = 0;

		for (size_t k = 0; k < n; k++)
			count[rf_rec_byte(&ops[a[k]], d)]++;
		if (count[rf_rec_byte(&ops[a[0]], d)] == n)
			continue;
		for (unsigned int v = 0; v < 256; v++) {
			size_t c = count[v];

			count[v] = at;
			at += c;
		}
		for (size_t k = 0; k < n; k++)
			b[count[rf_rec_byte(&ops[a[k]], d)]++] = a[k];
		t = a;
		a = b;
		b = t;
	}
	memcpy(rf->order + lo, a, n * sizeof(*a));
	/* lo is a multiple of RF_PIPE_BATCH: ops in order are published so. */
	memset(rf->sorted + lo / RF_PIPE_BATCH, 1, (n + RF_PIPE_BATCH - 1) / RF_PIPE_BATCH);
}

/*
 * Publishes the ops parsed so far to a load's applier, in order
 * (rf_order()); a load too small for bulk mode, in the file's order (only
 * bulk mode gains from sorted input).
 */
static void rf_pipe_send(struct routefile *rf, bool done, int ret, const struct errbuf *err)
{
	if (done && rf->n_ops <= ROUTEFILE_BULK_OPS)
		rf->in_order = true;
	if (rf->n_ops > rf->sent)
		rf_order(rf, rf->sent, rf->n_ops);
	rf->sent = rf->n_ops;
	rf->in_order = true;
	rf_pipe_publish(rf, done, ret, err);
}

static int rf_op_push(struct routefile *rf, struct rf_op *op)
{
	unsigned int fam;
	int ret;

	if (op->n_paths && !(op->kind & RF_OP_NHID)) {
		ret = rf_paths_intern(rf, rf->scratch, op->n_paths, &op->nh);
		if (ret)
			return ret;
	}
	if (rf->n_ops == rf->cap_ops && rf->pipe) {
		rf->pipe->full = true; /* mapped for the file's size at the start */
		return -EOVERFLOW;
	}
	if (rf_big_grow((void **)&rf->ops, &rf->cap_ops, rf->n_ops, sizeof(*rf->ops)))
		return -ENOMEM;
	if (!rf_run_goes_on(rf, op)) {
		/* As many runs as ops at most: in a load, mapped as many at the start. */
		if (rf_big_grow((void **)&rf->runs, &rf->cap_runs, rf->n_runs, sizeof(*rf->runs)))
			return -ENOMEM;
		rf->runs[rf->n_runs++] = (struct rf_run){
			.op = rf->n_ops, .line = op->line, .col = op->col, .table = op->table
		};
	}
	rf_rec_pack(op, &rf->ops[rf->n_ops++]);
	if (!rf->pipe)
		return 0;
	fam = rf->ops[rf->n_ops - 1].family == AF_INET6;
	if (rf->last_of[fam] > rf->sent &&
	    rf_rec_cmp(&rf->ops[rf->last_of[fam] - 1], &rf->ops[rf->n_ops - 1]) > 0)
		rf->in_order = false;
	rf->last_of[fam] = rf->n_ops;
	/* Ops out of order wait for the end of their chunk, and are sorted with it. */
	if (rf->n_ops % RF_SORT_CHUNK == 0 || (rf->in_order && rf->n_ops % RF_PIPE_BATCH == 0))
		rf_pipe_send(rf, false, 0, NULL);
	return 0;
}

/* Whether the owner asked to stop (ROUTEFILE_CANCEL, ROUTEFILE_ABANDON bits), or 0. */
static int rf_cancelled(const struct routefile *rf)
{
	return rf->opts.cancel ? uatomic_read(rf->opts.cancel) : 0;
}

/* One whole line, without its '\n'. */
static int rf_line(struct routefile *rf, const char *s, size_t len)
{
	struct rf_parser pp;
	struct rf_op op;
	int ret;

	rf->lines++;
	if (len > ROUTEFILE_LINE_MAX)
		return rf_bad_add(rf, rf->lines, 1,
				  "the line is longer than " RF_STR(ROUTEFILE_LINE_MAX) " bytes");
	memset(&op, 0, sizeof(op));
	op.line = rf->lines;
	rf_parser_init(&pp, s, len, rf->opts.family, rf->scratch, rf, &rf->err);
	ret = rf_parse_line(&pp, rf->opts.format, &op);
	if (ret == -ENODATA)
		return 0;
	if (ret == -EINVAL)
		return rf_bad_add(rf, rf->lines, pp.col, rf->err.msg);
	if (ret)
		return ret;
	return rf_op_push(rf, &op);
}

/* Keeps the start of a line cut by the end of a feed (only what can be parsed). */
static int rf_carry(struct routefile *rf, const char *s, size_t len)
{
	if (rf->carry_long || rf->carry_len + len > ROUTEFILE_LINE_MAX) {
		rf->carry_long = true;
		return 0;
	}
	if (!rf->carry) {
		rf->carry = malloc(ROUTEFILE_LINE_MAX);
		if (!rf->carry)
			return -ENOMEM;
	}
	memcpy(rf->carry + rf->carry_len, s, len);
	rf->carry_len += len;
	return 0;
}

/* The carried line, with @len more bytes, is whole. */
static int rf_carry_end(struct routefile *rf, const char *s, size_t len)
{
	int ret = rf_carry(rf, s, len);

	if (!ret && rf->carry_long) {
		rf->lines++;
		ret = rf_bad_add(rf, rf->lines, 1,
				 "the line is longer than " RF_STR(ROUTEFILE_LINE_MAX) " bytes");
	} else if (!ret) {
		ret = rf_line(rf, rf->carry, rf->carry_len);
	}
	rf->carry_len = 0;
	rf->carry_long = false;
	return ret;
}

static int rf_feed(struct routefile *rf, const char *buf, size_t len, bool last)
{
	const char *p = buf, *end = buf + len, *nl;
	int ret;

	if (len && (rf->carry_len || rf->carry_long)) {
		nl = memchr(p, '\n', len);
		if (!nl)
			return last ? rf_carry_end(rf, p, len) : rf_carry(rf, p, len);
		ret = rf_carry_end(rf, p, (size_t)(nl - p));
		if (ret)
			return ret;
		p = nl + 1;
	}
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (!(rf->lines & 0xffff) && rf_cancelled(rf))
			return -ECANCELED;
		ret = rf_line(rf, p, (size_t)(nl - p));
		if (ret)
			return ret;
		p = nl + 1;
	}
	if (!last)
		return rf_carry(rf, p, (size_t)(end - p));
	if (rf->carry_len || rf->carry_long)
		return rf_carry_end(rf, p, (size_t)(end - p));
	return p < end ? rf_line(rf, p, (size_t)(end - p)) : 0;
}

int routefile_feed(struct routefile *rf, const char *buf, size_t len, bool last)
{
	int ret;

	if (rf->broken)
		return -ENOMEM;
	rf->bytes += len;
	if (rf->opts.max_size && rf->bytes > rf->opts.max_size)
		ret = -EFBIG;
	else if (rf_cancelled(rf))
		ret = -ECANCELED;
	else
		ret = rf_feed(rf, buf, len, last);
	if (ret)
		rf->broken = true;
	return ret;
}

/* Kernel pseudo file systems: files that say they are regular, are not files on disk. */
static const char *rf_pseudo_fs(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} fs[] = {
		{ PROC_SUPER_MAGIC, "procfs" },       { SYSFS_MAGIC, "sysfs" },
		{ DEBUGFS_MAGIC, "debugfs" },         { TRACEFS_MAGIC, "tracefs" },
		{ SECURITYFS_MAGIC, "securityfs" },   { CGROUP_SUPER_MAGIC, "cgroupfs" },
		{ CGROUP2_SUPER_MAGIC, "cgroup2fs" }, { BPF_FS_MAGIC, "bpffs" },
		{ EFIVARFS_MAGIC, "efivarfs" },
	};
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return NULL;
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		if ((unsigned long)sf.f_type == fs[i].magic)
			return fs[i].name;
	}
	return NULL;
}

static const char *rf_file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

int routefile_check_fd(int fd, const char *name, uint64_t max_size, struct errbuf *err)
{
	const char *pseudo;
	struct stat st;
	int fl;

	if (fstat(fd, &st)) {
		err_set(err, "%s: %s", name, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(err, "%s is %s: only regular files are read as route files", name,
			rf_file_kind(st.st_mode));
		return -EINVAL;
	}
	pseudo = rf_pseudo_fs(fd);
	if (pseudo) {
		err_set(err,
			"%s is on %s, not a file on disk: only regular files are read as route "
			"files",
			name, pseudo);
		return -EINVAL;
	}
	if (max_size && (uint64_t)st.st_size > max_size) {
		err_set(err,
			"%s is %lld bytes, more than the limit of %" PRIu64
			" (max-route-file-size)",
			name, (long long)st.st_size, max_size);
		return -EFBIG;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		err_set(err, "%s: %s", name, strerror(errno));
		return -errno;
	}
	return 0;
}

int routefile_open(const char *path, uint64_t max_size, struct errbuf *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), ret;

	if (fd < 0) {
		ret = -errno;
		err_set(err, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = routefile_check_fd(fd, path, max_size, err);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* @ret of a read or a feed, with its message in @err. */
static int rf_read_error(const struct routefile *rf, int ret, struct errbuf *err)
{
	const char *name = rf->opts.name;

	if (ret == -EFBIG)
		err_set(err, "%s has more than %" PRIu64 " bytes, the limit (max-route-file-size)",
			name, rf->opts.max_size);
	else if (ret == -ECANCELED)
		err_set(err, "%s: cancelled", name);
	else if (ret == -ENOMEM)
		err_set(err, "%s: out of memory", name);
	else if (ret == -EOVERFLOW && rf->pipe && rf->pipe->full)
		err_set(err, "%s grew while it was read", name);
	else if (ret)
		err_set(err, "%s: %s", name, strerror(-ret));
	return ret;
}

int routefile_read_fd(struct routefile *rf, int fd, struct errbuf *err)
{
	const char *name = rf->opts.name;
	char *buf = rf_big_reserve(RF_READ_CHUNK);
	ssize_t n;
	int ret = 0;

	if (!buf) {
		err_set(err, "%s: out of memory", name);
		return -ENOMEM;
	}
	for (;;) {
		if (rf_cancelled(rf)) {
			ret = -ECANCELED;
			break;
		}
		n = read(fd, buf, RF_READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		ret = routefile_feed(rf, buf, (size_t)n, n == 0);
		if (ret || n == 0)
			break;
	}
	rf_big_free(buf, RF_READ_CHUNK);
	return rf_read_error(rf, ret, err);
}

int routefile_read_file(struct routefile *rf, const char *path, struct errbuf *err)
{
	int fd, ret;

	if (strcmp(path, "-") == 0)
		return routefile_read_fd(rf, STDIN_FILENO, err);
	fd = routefile_open(path, rf->opts.max_size, err);
	if (fd < 0)
		return fd;
	ret = routefile_read_fd(rf, fd, err);
	close(fd);
	return ret;
}

size_t routefile_mem(const struct routefile *rf)
{
	/* Mapped arrays: what is in use; the rest of their capacity is not backed. */
	return sizeof(*rf) + strlen(rf->opts.name) + 1 +
	       (rf->ops ? rf->n_ops * sizeof(*rf->ops) : 0) +
	       (rf->runs ? rf->n_runs * sizeof(*rf->runs) : 0) +
	       rf->cap_paths * sizeof(*rf->paths) + rf->cap_sets * sizeof(*rf->sets) +
	       rf->cap_bad * sizeof(*rf->bad) + rf->msgs_cap +
	       (rf->carry ? ROUTEFILE_LINE_MAX : 0) +
	       (rf->journal ? rf->n_ops * sizeof(*rf->journal) : 0) +
	       rf->cap_side * sizeof(*rf->side);
}

/* ----------------------------------------------------------------- apply */

static void rf_progress(routefile_progress_fn *fn, void *ctx, const char *phase, uint64_t done,
			uint64_t total)
{
	if (fn)
		fn(ctx, phase, done, total);
}

/*
 * Applier: the run of op @i, which has its column and table, and its line
 * (the run's first line + @i - the run's first op). Found from the last one
 * looked at: the apply goes forward, a rollback back.
 */
static const struct rf_run *rf_run_of(struct routefile *rf, uint64_t i)
{
	const struct rf_run *runs = rf->apply_run;
	uint64_t k = rf->run_at, lo = 0, hi = rf->apply_runs;

	/* Mostly the last op's run, or the next; a load's sorted chunks jump. */
	if (k + 1 < hi && runs[k + 1].op <= i && (k + 2 == hi || runs[k + 2].op > i))
		k++;
	if (runs[k].op > i || (k + 1 < hi && runs[k + 1].op <= i)) {
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;

			if (runs[mid].op <= i)
				lo = mid;
			else
				hi = mid;
		}
		k = lo;
	}
	if (k != rf->run_at)
		rf->run_at = k;
	return &runs[k];
}

/* The op applied @i-th: a load's in the order its parser set (rf_order()), else the @i-th. */
static uint64_t rf_op_at(const struct routefile *rf, uint64_t i)
{
	if (!rf->apply_sorted || !rf->apply_sorted[i / RF_PIPE_BATCH])
		return i;
	return (i & ~(uint64_t)(RF_SORT_CHUNK - 1)) + rf->apply_order[i];
}

static uint64_t rf_run_line(const struct rf_run *r, uint64_t i)
{
	return r->line + (i - r->op);
}

static const struct nh_path *rf_rec_paths(const struct routefile *rf, const struct rf_rec *rec)
{
	return rec->n_paths && !(rec->kind & RF_OP_NHID) ? rf->apply_paths + rec->nh : NULL;
}

/* Whether @r is the route op @rec makes, but for its nexthop. */
static bool rf_rec_made(const struct rf_rec *rec, const struct fib_route *r)
{
	return r->metric == rec->metric && r->plen == rec->plen && r->type == rec->type &&
	       r->proto == rec->proto && r->scope == rec->scope;
}

/* Journals what op @i changed: in its entry when the route that went in is the op's. */
static int rf_undo_save(struct routefile *rf, uint64_t i, const struct fib_undo *u)
{
	struct rf_undo *j = &rf->journal[i];
	bool op_made = u->has_added && rf_rec_made(&rf->apply_ops[i], &u->added);
	struct rf_side *side;

	if (u->has_removed || (u->has_added && !op_made)) {
		if (rf->n_side == RF_NONE)
			return -ENOMEM;
		side = rf_grow(rf->side, &rf->cap_side, rf->n_side + 1, sizeof(*side), 256);
		if (!side)
			return -ENOMEM;
		rf->side = side;
		side += rf->n_side;
		memset(side, 0, sizeof(*side));
		side->has_removed = u->has_removed;
		if (u->has_removed)
			side->removed = u->removed;
		side->has_added = u->has_added && !op_made;
		if (side->has_added)
			side->added = u->added;
		j->side = (uint32_t)rf->n_side++;
	}
	if (op_made) {
		j->nh = u->added.nh;
		j->added_op = true;
	}
	j->at = u->at;
	return 0;
}

/* The fib's undo record of op @i, rebuilt from the op and its journal entry. */
static void rf_undo_load(struct routefile *rf, uint64_t i, struct fib_undo *u)
{
	const struct rf_rec *rec = &rf->apply_ops[i];
	const struct rf_undo *j = &rf->journal[i];
	const struct rf_side *side = j->side != RF_NONE ? &rf->side[j->side] : NULL;
	uint32_t table = rf_run_of(rf, i)->table;

	memset(u, 0, sizeof(*u));
	u->dst.a.family = rec->family;
	memcpy(u->dst.a.b, rec->addr, sizeof(rec->addr));
	u->dst.plen = rec->plen;
	u->table = table ? table : FIB_TABLE_MAIN;
	u->at = j->at;
	if (j->added_op) {
		u->has_added = true;
		u->added = (struct fib_route){ .nh = j->nh,
					       .metric = rec->metric,
					       .plen = rec->plen,
					       .type = rec->type,
					       .proto = rec->proto,
					       .scope = rec->scope };
	} else if (side && side->has_added) {
		u->has_added = true;
		u->added = side->added;
	}
	if (side && side->has_removed) {
		u->has_removed = true;
		u->removed = side->removed;
	}
}

/* Applies op @i (of table @table), journaled. On error nothing changed and @ferr says why. */
static int rf_apply_op(struct routefile *rf, struct fib *f, uint64_t i, uint32_t table,
		       struct errbuf *ferr)
{
	const struct rf_rec *op = &rf->apply_ops[i];
	struct rf_undo *j = &rf->journal[i];
	struct fib_rcfg rc;
	struct fib_undo u;
	int ret;

	j->added_op = false;
	j->side = RF_NONE;
	rf_rec_rcfg(op, table, rf_rec_paths(rf, op), &rc);
	if (op->kind & RF_OP_DEL)
		ret = fib_route_del_undo(f, &rc, &u, ferr);
	else if (!rf->opts.claim || !(ret = rf->opts.claim(rf->opts.claim_ctx, &rc, ferr)))
		ret = fib_route_add_undo(f, &rc, &u, ferr);
	if (ret)
		return ret;
	ret = rf_undo_save(rf, i, &u);
	if (ret) {
		/* Cannot journal it: take it back now, while the record is at hand. */
		if (fib_undo_revert(f, &u, ferr))
			fib_undo_release(f, &u);
		err_set(ferr, "out of memory for the undo journal");
		j->added_op = false;
		j->side = RF_NONE;
	}
	return ret;
}

/*
 * Undoes ops @n - 1 down to 0. Returns 0, or the first revert's error with
 * its message in @err (that edit stays, its record released; the others
 * are still undone).
 */
static int rf_rollback(struct routefile *rf, struct fib *f, uint64_t n,
		       routefile_progress_fn *progress, void *ctx, struct errbuf *err)
{
	struct errbuf rerr;
	uint64_t failed_line = 0, kept = 0;
	int first = 0;

	rf_progress(progress, ctx, "rolling-back", 0, n);
	for (uint64_t k = n; k-- > 0;) {
		uint64_t op = rf_op_at(rf, k);
		struct fib_undo u;
		int ret;

		if ((n - k) % ROUTEFILE_CANCEL_OPS == 0 && (rf_cancelled(rf) & ROUTEFILE_ABANDON))
			return -ECANCELED; /* at exit: the FIB goes anyway */

		rf_undo_load(rf, op, &u);
		ret = fib_undo_revert(f, &u, &rerr);
		if (ret) {
			fib_undo_release(f, &u);
			kept++;
			if (!first) {
				first = ret;
				failed_line = rf_run_line(rf_run_of(rf, op), op);
				err_set(err, "%s", rerr.msg);
			}
		}
		if ((n - k) % ROUTEFILE_PROGRESS == 0)
			rf_progress(progress, ctx, "rolling-back", n - k, n);
	}
	if (n % ROUTEFILE_PROGRESS || !n)
		rf_progress(progress, ctx, "rolling-back", n, n);
	if (first)
		err_prefix(err, "undoing line %" PRIu64 " failed (%" PRIu64 " edits stay)",
			   failed_line, kept);
	return first;
}

/* Keeps every edit: the routes they took out let their nexthops go. */
static void rf_commit(struct routefile *rf, struct fib *f)
{
	for (uint64_t i = 0; i < rf->n_side; i++) {
		struct fib_undo u;

		if (!rf->side[i].has_removed)
			continue;
		memset(&u, 0, sizeof(u));
		u.has_removed = true;
		u.removed = rf->side[i].removed;
		fib_undo_release(f, &u);
	}
	rf->n_side = 0;
}

/* The first bad line, and how many more, in one message. */
static int rf_bad_lines_error(const struct routefile *rf, struct errbuf *err)
{
	const char *msg = rf->bad_kept ? rf->msgs + rf->bad[0].msg : "bad lines";

	if (rf->n_bad > 1)
		err_set(err, "%.*s (and %" PRIu64 " more errors)", ERR_MSG_MAX - 40, msg,
			rf->n_bad - 1);
	else
		err_set(err, "%s", msg);
	return -EINVAL;
}

/*
 * How far the applier may go from op @i: to the end of the ops, or during
 * a load, to what the parser published, waiting until that is @want ops
 * past @i or the parse has ended (at most RF_PIPE_TAKE at a time, so that
 * a bad line stops it soon). @i: no more ops, or the parse found a bad
 * line or failed.
 */
static uint64_t rf_avail(struct routefile *rf, uint64_t i, uint64_t want)
{
	struct rf_pipe *pp = rf->pipe;
	uint64_t n;
	bool bad;

	rf->apply_ops = rf->ops; /* in a load, mapped whole at its start */
	rf->apply_order = rf->order;
	rf->apply_sorted = rf->sorted;
	rf->apply_run = rf->runs;
	if (!pp) {
		rf->apply_paths = rf->paths;
		rf->apply_runs = rf->n_runs;
		return rf->apply_total = rf->n_ops;
	}
	pthread_mutex_lock(&pp->lock);
	if (!pp->done && !pp->bad && pp->published < i + want) {
		uint64_t t0 = rf_now_ns();

		while (!pp->done && !pp->bad && pp->published < i + want)
			pthread_cond_wait(&pp->more, &pp->lock);
		rf->waited_ns += rf_now_ns() - t0;
	}
	n = pp->published;
	bad = pp->bad || pp->ret; /* nothing will be applied */
	rf->apply_paths = pp->paths;
	rf->apply_runs = pp->runs;
	rf->apply_total = pp->done ? n : 0; /* for progress: unknown until the parse ends */
	pthread_mutex_unlock(&pp->lock);
	if (bad)
		return i;
	return n - i > RF_PIPE_TAKE ? i + RF_PIPE_TAKE : n;
}

/*
 * Applies every op in order; stops at the first that fails to apply
 * (unless it may be skipped) and returns its error, @failed its index
 * (at the end: how many there were).
 */
static int rf_apply_all(struct routefile *rf, struct fib *f, routefile_progress_fn *progress,
			void *ctx, struct routefile_result *r, uint64_t *failed, struct errbuf *err)
{
	struct errbuf ferr;
	uint64_t i, op, avail = 0;

	for (i = 0;; i++) {
		const struct rf_run *run;
		int ret;

		if (i == avail && (avail = rf_avail(rf, i, 1)) == i)
			break;
		if (i % ROUTEFILE_CANCEL_OPS == 0 && rf_cancelled(rf)) {
			*failed = i;
			err_set(err, "%s: cancelled", rf->opts.name);
			return -ECANCELED;
		}
		op = rf_op_at(rf, i);
		run = rf_run_of(rf, op);
		ret = rf_apply_op(rf, f, op, run->table, &ferr);

		if (ret && (!rf->opts.skip_bad_lines || ret == -ENOMEM ||
			    rf_bad_add(rf, rf_run_line(run, op), run->col, ferr.msg))) {
			*failed = i;
			err_set(err, "%s:%" PRIu64 ":%u: %s", rf->opts.name, rf_run_line(run, op),
				run->col, ferr.msg);
			return ret;
		}
		if (ret)
			r->skipped++;
		else
			r->applied++;
		if ((i + 1) % ROUTEFILE_PROGRESS == 0)
			rf_progress(progress, ctx, "applying", i + 1, rf->apply_total);
	}
	*failed = i;
	return 0;
}

static void rf_pipe_free(struct routefile *rf)
{
	struct rf_pipe *pp = rf->pipe;

	for (size_t i = 0; i < pp->n_old; i++)
		free(pp->old[i]);
	free(pp->old);
	pthread_cond_destroy(&pp->more);
	pthread_mutex_destroy(&pp->lock);
	rf_big_free(pp, sizeof(*pp));
	rf->pipe = NULL;
}

/*
 * A load's applier is done, with @ret: waits for the parse to end, then
 * says what the load comes to, as a read and an apply in turn would: the
 * read's error first, then the bad lines, then @ret.
 */
static int rf_pipe_end(struct routefile *rf, int ret, struct errbuf *err)
{
	struct rf_pipe *pp = rf->pipe;

	pthread_join(pp->thread, NULL);
	rf->parse_ns = pp->parse_ns;
	if (pp->ret) {
		ret = pp->ret;
		err_set(err, "%s", pp->err.msg);
	} else if (rf->n_bad) {
		ret = rf_bad_lines_error(rf, err);
	}
	rf_pipe_free(rf);
	rf->apply_paths = rf->paths;
	return ret;
}

/* Applies the ops of @rf (of a load: as they are parsed) as one transaction. */
static int rf_apply(struct routefile *rf, struct fib *f, routefile_progress_fn *progress, void *ctx,
		    struct routefile_result *res, struct errbuf *err)
{
	struct routefile_result r = { 0 };
	uint64_t failed = 0, t0;
	bool bulk;
	int ret, ret2;

	rf->applied = true;
	bulk = rf_avail(rf, 0, ROUTEFILE_BULK_OPS + 1) > ROUTEFILE_BULK_OPS;
	if (bulk)
		fib_bulk_begin(f);
	rf_progress(progress, ctx, "applying", 0, rf->apply_total);
	ret = rf_apply_all(rf, f, progress, ctx, &r, &failed, err);
	if (rf->pipe)
		ret = rf_pipe_end(rf, ret, err);
	r.parse_ns = rf->parse_ns;
	r.waited_ns = rf->waited_ns;
	if (ret == -ECANCELED && (rf_cancelled(rf) & ROUTEFILE_ABANDON)) {
		/* At exit: no rollback, no rebalancing; fib_destroy() takes the FIB as it is. */
		rf_journal_free(rf);
		if (res)
			*res = r;
		return ret;
	}
	if (ret) {
		struct errbuf rerr;

		r.applied = 0;
		ret2 = rf_rollback(rf, f, failed, progress, ctx, &rerr);
		if (ret2 == -ECANCELED) {
			/* Abandoned in the middle (at exit): as above. */
			rf_journal_free(rf);
			if (res)
				*res = r;
			return ret2;
		}
		if (ret2) {
			size_t n = err ? strlen(err->msg) : 0;

			if (err)
				snprintf(err->msg + n, sizeof(err->msg) - n, "; %s", rerr.msg);
			ret = -ENOTRECOVERABLE;
		}
	} else {
		if (rf->n_ops % ROUTEFILE_PROGRESS || !rf->n_ops)
			rf_progress(progress, ctx, "applying", rf->n_ops, rf->n_ops);
		rf_commit(rf, f);
	}
	rf_journal_free(rf);
	/*
	 * An apply runs once: the ops and their runs are done with. They go
	 * before the rebuild, which makes the load's new nodes while the
	 * lazy ones still stand (a full view's ops are 34 MB).
	 */
	rf_ops_free(rf);
	if (bulk) {
		rf_progress(progress, ctx, "rebalancing", 0, 1);
		t0 = rf_now_ns();
		fib_bulk_end(f);
		r.rebalance_ns = rf_now_ns() - t0;
		rf_progress(progress, ctx, "rebalancing", 1, 1);
	}
	if (res)
		*res = r;
	return ret;
}

int routefile_apply(struct routefile *rf, struct fib *f, routefile_progress_fn *progress, void *ctx,
		    struct routefile_result *res, struct errbuf *err)
{
	err_clear(err);
	if (res)
		*res = (struct routefile_result){ 0 };
	if (rf->applied) {
		err_set(err, "%s: already applied", rf->opts.name);
		return -EALREADY;
	}
	if (rf->broken) {
		err_set(err, "%s: out of memory while parsing", rf->opts.name);
		return -ENOMEM;
	}
	if (rf->n_bad && !rf->opts.skip_bad_lines)
		return rf_bad_lines_error(rf, err);
	rf->cap_journal = rf->n_ops ? rf->n_ops : 1;
	rf->journal = rf_big_resize(NULL, 0, rf_journal_size(rf));
	if (!rf->journal) {
		rf->cap_journal = 0;
		err_set(err, "%s: out of memory for the undo journal of %" PRIu64 " routes",
			rf->opts.name, rf->n_ops);
		return -ENOMEM;
	}
	return rf_apply(rf, f, progress, ctx, res, err);
}

/* ------------------------------------------------------------------ load */

/* A load's parser thread: reads and parses the whole file, then says it is done. */
static void *rf_pipe_main(void *arg)
{
	struct routefile *rf = arg;
	struct rf_pipe *pp = rf->pipe;
	uint64_t t0 = rf_now_ns();
	struct errbuf err;
	int ret;

	err_clear(&err);
	if (pp->buf)
		ret = rf_read_error(rf, routefile_feed(rf, pp->buf, pp->len, true), &err);
	else
		ret = routefile_read_fd(rf, pp->fd, &err);
	/* Read by the applier after it joins this thread. */
	pp->parse_ns = rf_now_ns() - t0;
	rf_pipe_send(rf, true, ret, &err);
	return NULL;
}

/*
 * Starts a load of @size bytes (of @fd, or @buf): the ops array and the
 * journal mapped for the most ops that many bytes can hold, and the parser
 * thread. Returns false, @rf as it was, when it cannot.
 */
static bool rf_pipe_start(struct routefile *rf, int fd, const char *buf, size_t len, uint64_t size)
{
	/* An op's line has two bytes at least ("::") and its end. */
	uint64_t cap = size / 2 + 2;
	struct rf_pipe *pp;
	sigset_t all, old;
	int ret;

	/* The ops are the largest of the three arrays. */
	if (cap > SIZE_MAX / sizeof(*rf->ops))
		return false;
	pp = rf_big_reserve(sizeof(*pp)); /* 2 MiB: its radix buffers */
	if (!pp)
		return false;
	rf->ops = rf_big_reserve(cap * sizeof(*rf->ops));
	rf->runs = rf_big_reserve(cap * sizeof(*rf->runs));
	rf->journal = rf_big_reserve(cap * sizeof(*rf->journal));
	rf->order = rf_big_reserve(cap * sizeof(*rf->order));
	rf->sorted = rf_big_reserve(cap / RF_PIPE_BATCH + 1);
	if (!rf->ops || !rf->runs || !rf->journal || !rf->order || !rf->sorted)
		goto unmap;
	rf->in_order = true;
	rf->cap_ops = rf->cap_runs = rf->cap_journal = cap;
	pp->fd = fd;
	pp->buf = buf;
	pp->len = len;
	pthread_mutex_init(&pp->lock, NULL);
	pthread_cond_init(&pp->more, NULL);
	rf->pipe = pp;
	/* Signals are the caller's threads' to take, not the parser's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&pp->thread, NULL, rf_pipe_main, rf);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		return true;
	rf_pipe_free(rf);
	pp = NULL;
unmap:
	rf_big_free(pp, sizeof(*pp));
	rf_big_free(rf->ops, cap * sizeof(*rf->ops));
	rf_big_free(rf->runs, cap * sizeof(*rf->runs));
	rf_big_free(rf->journal, cap * sizeof(*rf->journal));
	rf_big_free(rf->order, cap * sizeof(*rf->order));
	rf_big_free(rf->sorted, cap / RF_PIPE_BATCH + 1);
	rf->ops = NULL;
	rf->runs = NULL;
	rf->journal = NULL;
	rf->order = NULL;
	rf->sorted = NULL;
	rf->cap_ops = rf->cap_runs = rf->cap_journal = 0;
	return false;
}

/* Whether @rf can be loaded by a parser thread: fresh, and all or nothing. */
static bool rf_pipe_can(const struct routefile *rf)
{
	return !rf->opts.skip_bad_lines && !rf->applied && !rf->broken && !rf->bytes && !rf->ops;
}

int routefile_load_fd(struct routefile *rf, int fd, struct fib *f, routefile_progress_fn *progress,
		      void *ctx, struct routefile_result *res, struct errbuf *err)
{
	uint64_t t0 = rf_now_ns();
	struct stat st;
	int ret;

	err_clear(err);
	if (rf_pipe_can(rf) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
	    rf_pipe_start(rf, fd, NULL, 0, (uint64_t)st.st_size))
		return rf_apply(rf, f, progress, ctx, res, err);
	ret = routefile_read_fd(rf, fd, err);
	rf->parse_ns = rf_now_ns() - t0;
	if (ret) {
		if (res)
			*res = (struct routefile_result){ 0 };
		return ret;
	}
	return routefile_apply(rf, f, progress, ctx, res, err);
}

int routefile_load_buf(struct routefile *rf, const char *buf, size_t len, struct fib *f,
		       routefile_progress_fn *progress, void *ctx, struct routefile_result *res,
		       struct errbuf *err)
{
	uint64_t t0 = rf_now_ns();
	int ret;

	err_clear(err);
	if (rf_pipe_can(rf) && rf_pipe_start(rf, -1, buf, len, len))
		return rf_apply(rf, f, progress, ctx, res, err);
	ret = rf_read_error(rf, routefile_feed(rf, buf, len, true), err);
	rf->parse_ns = rf_now_ns() - t0;
	if (ret) {
		if (res)
			*res = (struct routefile_result){ 0 };
		return ret;
	}
	return routefile_apply(rf, f, progress, ctx, res, err);
}
