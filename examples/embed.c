/* SPDX-License-Identifier: MIT */
/*
 * Embedding liblcfib: a writer thread loads a route file into a FIB while a
 * reader thread looks addresses up, through the trie and through a
 * destination cache, without ever waiting for the writer.
 *
 *   cc -D_LGPL_SOURCE embed.c $(pkg-config --cflags --libs lcfib) -lpthread
 *   ./a.out ROUTES ADDR...
 *
 * ROUTES is a route file as `lcfibctl load` takes it (iproute2 batch lines
 * or a prefix per line). Once the load is in, the reader prints, for each
 * ADDR of the main table, the route a lookup picks ("10.1.2.3: 10.1.2.0/24
 * via 192.0.2.1 ...") or "no route"; the program fails if the cache and the
 * trie disagree. A file that does not load prints the library's message
 * ("ROUTES:LINE:COL: ...") and exits 1, with the FIB as it was: empty.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <lcfib/cache.h>
#include <lcfib/fib.h>
#include <lcfib/routefile.h>

#define EMBED_LINE 256 /* one answer: an address, a route, room to spare */

struct embed {
	struct fib *fib;
	struct cache *cache; /* IPv4, main table, one reader thread */
	struct addr *addr;
	int n_addr;
	int loaded;            /* set by the writer, read by the reader (atomic) */
	unsigned long lookups; /* made by the reader while the load ran */
	int mismatches;        /* cache answers that differ from the trie's */
	char (*answer)[EMBED_LINE];
};

/*
 * Reader: one lookup through the trie, and for IPv4 through the cache too;
 * @check: the FIB does not change meanwhile, so the two answers must agree.
 */
static void embed_lookup_rcu(struct embed *e, int i, bool check, char *line, size_t size)
{
	const struct addr *a = &e->addr[i];
	char buf[ADDR_STRLEN], route[EMBED_LINE - ADDR_STRLEN - 8];
	struct addr_prefix p;
	const struct fib_route *r = fib_match_rcu(e->fib, FIB_TABLE_MAIN, a, &p);

	addr_format(a, buf, sizeof(buf));
	if (r)
		fib_route_format(&p, r, route, sizeof(route));
	else
		snprintf(route, sizeof(route), "no route");
	snprintf(line, size, "%s: %s", buf, route);

	if (a->family == AF_INET) {
		const struct fib_table *tb = fib_table_get_rcu(e->fib, FIB_TABLE_MAIN, AF_INET);
		const struct fib_route *t = tb ? fib_lookup4_rcu(tb, addr_key4(a)) : NULL;
		struct fib_route c;
		bool hit = cache_lookup4_rcu(e->cache, cache_thread(e->cache, 0), addr_key4(a), &c);

		if (check && (hit != (t != NULL) || (t && memcmp(&c, t, sizeof(c)) != 0)))
			e->mismatches++;
	}
}

static void *embed_reader(void *arg)
{
	struct embed *e = arg;
	char line[EMBED_LINE];

	fib_reader_register();
	/* While the writer loads: each lookup sees the FIB before, during or after it, never half a
	 * route. */
	while (!__atomic_load_n(&e->loaded, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < e->n_addr; i++) {
			fib_read_lock();
			embed_lookup_rcu(e, i, false, line, sizeof(line));
			fib_read_unlock();
			e->lookups++;
		}
	}
	/* After it: the answers to print (the route is copied out before the unlock). */
	for (int i = 0; i < e->n_addr; i++) {
		fib_read_lock();
		embed_lookup_rcu(e, i, true, e->answer[i], sizeof(e->answer[i]));
		fib_read_unlock();
	}
	fib_reader_unregister();
	return NULL;
}

/* Writer: the whole file, applied as one transaction. */
static int embed_load(struct fib *f, const char *path, struct errbuf *err)
{
	struct routefile_opts o = { .format = ROUTEFILE_AUTO, .name = path };
	struct routefile_result res;
	struct routefile *rf = routefile_new(&o);
	int ret;

	if (!rf) {
		snprintf(err->msg, sizeof(err->msg), "%s: %s", path, strerror(errno));
		return -errno;
	}
	ret = routefile_read_file(rf, path, err);
	if (!ret)
		ret = routefile_apply(rf, f, NULL, NULL, &res, err);
	if (!ret)
		printf("loaded %llu routes from %llu lines\n", (unsigned long long)res.applied,
		       (unsigned long long)routefile_lines(rf));
	routefile_free(rf);
	return ret;
}

int main(int argc, char **argv)
{
	struct cache_cfg cfg = { .size = 1024, .threads = 1, .mode = CACHE_COMMON };
	struct embed e = { .n_addr = argc - 2 };
	struct errbuf err = { "" };
	struct fib_state st;
	pthread_t reader;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: %s ROUTES ADDR...\n", argv[0]);
		return 2;
	}
	e.addr = calloc(e.n_addr, sizeof(*e.addr));
	e.answer = calloc(e.n_addr, sizeof(*e.answer));
	if (!e.addr || !e.answer) {
		perror("calloc");
		return 1;
	}
	for (int i = 0; i < e.n_addr; i++) {
		if (addr_parse(argv[i + 2], AF_UNSPEC, &e.addr[i], &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 2;
		}
	}

	/* This thread is the FIB's writer: it makes the FIB, the cache, and every change. */
	e.fib = fib_new();
	if (!e.fib) {
		perror("fib_new");
		return 1;
	}
	e.cache = cache_new(e.fib, FIB_TABLE_MAIN, AF_INET, &cfg, &err);
	if (!e.cache) {
		fprintf(stderr, "cache_new: %s\n", err.msg);
		return 1;
	}
	ret = pthread_create(&reader, NULL, embed_reader, &e);
	if (ret) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		return 1;
	}

	ret = embed_load(e.fib, argv[1], &err);
	__atomic_store_n(&e.loaded, 1, __ATOMIC_RELEASE);
	pthread_join(reader, NULL);

	if (ret)
		fprintf(stderr, "%s\n", err.msg);
	for (int i = 0; i < e.n_addr; i++)
		printf("%s\n", e.answer[i]);
	fib_get_state(e.fib, &st);
	printf("routes: %llu IPv4, %llu IPv6\n", (unsigned long long)st.routes4,
	       (unsigned long long)st.routes6);
	fprintf(stderr, "reader: %lu lookups while the load ran, %d cache mismatches\n", e.lookups,
		e.mismatches);

	/* No reader left: the cache, then the FIB, go. */
	cache_destroy(e.cache);
	fib_destroy(e.fib);
	free(e.addr);
	free(e.answer);
	if (e.mismatches)
		return 3;
	return ret ? 1 : 0;
}
