/* SPDX-License-Identifier: MIT */
/*
 * The full-table loader reads the file through `gzip -dc` so that the
 * tests need no zlib; a missing file is -ENOENT, so callers can skip.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/tdata.h"

#define TDATA_FULLVIEW "fullview-2024.txt.gz"

const char *tdata_dir(void)
{
	const char *d = getenv("LCFIB_DATA");

	return d && *d ? d : "tests/data";
}

/* A growing array of prefixes. */
struct tdata_vec {
	struct addr_prefix *p;
	size_t n, cap;
};

static int tdata_vec_push(struct tdata_vec *v, const struct addr_prefix *p)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1024;
		struct addr_prefix *np = realloc(v->p, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		v->p = np;
		v->cap = cap;
	}
	v->p[v->n++] = *p;
	return 0;
}

/* The shell command that decompresses @path, with @path single-quoted. */
static char *tdata_gunzip_cmd(const char *path)
{
	size_t len = strlen("gzip -dc ''") + 4 * strlen(path) + 1;
	char *cmd = malloc(len), *o;

	if (!cmd)
		return NULL;
	o = cmd + sprintf(cmd, "gzip -dc '");
	for (const char *s = path; *s; s++) {
		if (*s == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *s;
		}
	}
	strcpy(o, "'");
	return cmd;
}

/* Strips trailing blanks and the line end; returns the line's start past leading blanks. */
static char *tdata_trim(char *line)
{
	size_t n = strlen(line);

	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
		     line[n - 1] == '\t'))
		line[--n] = '\0';
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

/* Reads prefixes from @f (the output of gzip on @path) into @v4 and @v6. */
static int tdata_read(FILE *f, const char *path, struct tdata_vec *v4, struct tdata_vec *v6)
{
	char *line = NULL;
	size_t size = 0, lineno = 0;
	int ret = 0;

	while (getline(&line, &size, f) >= 0) {
		struct addr_prefix p;
		struct errbuf err;
		char *s = tdata_trim(line);

		lineno++;
		if (!*s || *s == '#')
			continue;
		ret = addr_parse_prefix(s, AF_UNSPEC, &p, &err);
		if (ret) {
			fprintf(stderr, "%s:%zu: %s\n", path, lineno, err.msg);
			break;
		}
		ret = tdata_vec_push(p.a.family == AF_INET ? v4 : v6, &p);
		if (ret) {
			fprintf(stderr, "%s:%zu: out of memory\n", path, lineno);
			break;
		}
	}
	free(line);
	return ret;
}

int tdata_load_fullview(struct tdata_table *t)
{
	struct tdata_vec v4 = { 0 }, v6 = { 0 };
	char path[4096];
	struct stat sb;
	char *cmd;
	FILE *f;
	int ret, status;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/%s", tdata_dir(), TDATA_FULLVIEW);
	/* Checked here because gzip's own failure would only show as an exit status. */
	if (stat(path, &sb) < 0) {
		ret = -errno;
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return ret;
	}
	cmd = tdata_gunzip_cmd(path);
	if (!cmd)
		return -ENOMEM;
	f = popen(cmd, "r");
	free(cmd);
	if (!f) {
		ret = -errno;
		fprintf(stderr, "%s: cannot run gzip -dc: %s\n", path, strerror(errno));
		return ret;
	}
	ret = tdata_read(f, path, &v4, &v6);
	status = pclose(f);
	/* After a parse error gzip may die of SIGPIPE: the parse error is the news. */
	if (!ret && (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		fprintf(stderr, "%s: gzip -dc failed (status %#x)\n", path, (unsigned int)status);
		ret = -EIO;
	}
	if (ret) {
		free(v4.p);
		free(v6.p);
		return ret;
	}
	t->v4 = v4.p;
	t->n4 = v4.n;
	t->v6 = v6.p;
	t->n6 = v6.n;
	return 0;
}

void tdata_free(struct tdata_table *t)
{
	free(t->v4);
	free(t->v6);
	memset(t, 0, sizeof(*t));
}

uint64_t tdata_seed(uint64_t dflt)
{
	const char *s = getenv("LCFIB_SEED");
	uint64_t seed = dflt;

	if (s && *s) {
		char *end;

		errno = 0;
		seed = strtoull(s, &end, 0);
		if (errno || *end) {
			fprintf(stderr, "LCFIB_SEED='%s' is not a number; using %llu\n", s,
				(unsigned long long)dflt);
			seed = dflt;
		}
	}
	fprintf(stderr, "seed: %llu\n", (unsigned long long)seed);
	return seed;
}

int tdata_edit_set(void *ctx, const struct fib_route *old, unsigned int n_old,
		   struct fib_route *out, unsigned int cap)
{
	const struct tdata_edit *req = ctx;

	(void)old;
	(void)n_old;
	if (req->del)
		return 0;
	if (cap < 1)
		return -ENOSPC;
	out[0] = (struct fib_route){ .metric = req->metric, .type = FIB_RT_UNICAST };
	return 1;
}

void tdata_shuffle32(uint32_t *v, size_t n, struct tdata_rng *r)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(tdata_rng_next(r) % i);
		uint32_t x = v[i - 1];

		v[i - 1] = v[j];
		v[j] = x;
	}
}
