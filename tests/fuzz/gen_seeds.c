/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of the fuzz targets, made by the encoder so that
 * it follows the code: gen_seeds RTNL_DIR FPM_DIR. Each seed is one of the
 * kinds of message a feed sees (routes of both families, single path,
 * multipath with weights, RTA_VIA, nexthop ids, big tables, error types,
 * deletes; nexthop objects, blackholes, groups), alone and all together,
 * and for FPM, framed one by one, as zebra's DEL+NEW pairs, and as one
 * stream of frames.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/rtnetlink.h>

#include "lib/fpm.h"
#include "lib/rtnl.h"

#define SEED_MAX 65536

union seed_buf {
	uint8_t b[SEED_MAX];
	uint32_t align;
};

static union seed_buf all, stream, frame;
static size_t all_len, stream_len;
static unsigned int n_seeds;

static void seed_write(const char *dir, const char *kind, const void *p, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%02u", dir, kind, n_seeds++);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void seed_fpm(const char *dir, const void *nl, size_t len)
{
	size_t flen = fpm_frame_encode(frame.b, sizeof(frame.b), nl, len);

	if (!flen) {
		fprintf(stderr, "gen_seeds: a frame of %zu bytes does not fit\n", len);
		exit(1);
	}
	seed_write(dir, "fpm", frame.b, flen);
	if (stream_len + flen <= sizeof(stream.b)) {
		memcpy(stream.b + stream_len, frame.b, flen);
		stream_len += flen;
	}
}

/* One message: a seed of its own in both corpora, and a part of "all". */
static void seed_msg(const char *const dirs[2], const void *p, size_t len)
{
	if (!len) {
		fprintf(stderr, "gen_seeds: a seed did not encode\n");
		exit(1);
	}
	seed_write(dirs[0], "rtnl", p, len);
	seed_fpm(dirs[1], p, len);
	if (all_len + len <= sizeof(all.b)) {
		memcpy(all.b + all_len, p, len);
		all_len += len;
	}
}

static struct nh_path seed_path(int family, const char *gw, uint32_t ifindex, uint16_t weight)
{
	struct nh_path p;

	memset(&p, 0, sizeof(p));
	if (gw) {
		p.gw_family = (uint8_t)family;
		inet_pton(family, gw, &p.gw);
	}
	p.ifindex = ifindex;
	p.weight = weight;
	return p;
}

static void seed_route(struct rtnl_route *r, int family, const char *dst, uint8_t plen)
{
	memset(r, 0, sizeof(*r));
	r->rc.dst.a.family = (uint8_t)family;
	if (dst)
		inet_pton(family, dst, r->rc.dst.a.b);
	r->rc.dst.plen = plen;
	r->rc.table = RT_TABLE_MAIN;
	r->rc.type = RTN_UNICAST;
	r->rc.proto = RTPROT_ZEBRA;
	r->rc.paths = r->paths;
}

static void seed_routes(const char *const dirs[2])
{
	static union seed_buf m;
	struct rtnl_route r;
	uint16_t create = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;

	seed_route(&r, AF_INET, "10.0.0.0", 8);
	r.paths[r.rc.n_paths++] = seed_path(AF_INET, "192.0.2.1", 2, 1);
	r.rc.metric = 20;
	r.prefsrc_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.9", &r.prefsrc);
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, create, 1, &r));
	seed_msg(dirs, m.b,
		 rtnl_encode_route(m.b, sizeof(m.b), RTM_DELROUTE, NLM_F_REQUEST, 2, &r));

	seed_route(&r, AF_INET6, "2001:db8::", 32);
	for (uint16_t i = 0; i < 4; i++)
		r.paths[r.rc.n_paths++] = seed_path(AF_INET6, "fe80::1", i + 1u, i * 20u + 1u);
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, create, 3, &r));

	seed_route(&r, AF_INET, "198.51.100.0", 24);
	r.paths[r.rc.n_paths++] = seed_path(AF_INET6, "fe80::2", 5, 1);
	r.paths[r.rc.n_paths++] = seed_path(AF_INET, "192.0.2.3", 6, 2);
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, create, 4, &r));
	r.rc.n_paths = 1;
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, create, 5, &r));

	seed_route(&r, AF_INET, "203.0.113.0", 24);
	r.rc.nh_id = 100;
	r.rc.table = 100000;
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, create, 6, &r));

	seed_route(&r, AF_INET6, NULL, 0);
	r.rc.type = RTN_BLACKHOLE;
	seed_msg(dirs, m.b, rtnl_encode_route(m.b, sizeof(m.b), RTM_NEWROUTE, NLM_F_MULTI, 7, &r));
}

static void seed_nexthops(const char *const dirs[2])
{
	static union seed_buf m;
	struct rtnl_nexthop n;
	uint16_t create = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;

	memset(&n, 0, sizeof(n));
	n.cfg.id = 1;
	n.cfg.family = AF_INET;
	n.cfg.path = seed_path(AF_INET, "192.0.2.1", 2, 1);
	seed_msg(dirs, m.b, rtnl_encode_nexthop(m.b, sizeof(m.b), RTM_NEWNEXTHOP, create, 8, &n));
	n.cfg.id = 2;
	n.cfg.family = AF_INET6;
	n.cfg.path = seed_path(AF_INET6, "fe80::1", 3, 1);
	n.cfg.path.flags = NH_F_ONLINK;
	seed_msg(dirs, m.b, rtnl_encode_nexthop(m.b, sizeof(m.b), RTM_NEWNEXTHOP, create, 9, &n));

	memset(&n, 0, sizeof(n));
	n.cfg.id = 3;
	n.cfg.blackhole = 1;
	seed_msg(dirs, m.b, rtnl_encode_nexthop(m.b, sizeof(m.b), RTM_NEWNEXTHOP, create, 10, &n));

	memset(&n, 0, sizeof(n));
	n.cfg.id = 100;
	n.cfg.n_members = 3;
	for (unsigned int i = 0; i < 3; i++) {
		n.cfg.member[i].id = i + 1;
		n.cfg.member[i].weight = (uint16_t)(i * 100 + 1);
	}
	seed_msg(dirs, m.b, rtnl_encode_nexthop(m.b, sizeof(m.b), RTM_NEWNEXTHOP, create, 11, &n));
	seed_msg(dirs, m.b, rtnl_encode_nexthop(m.b, sizeof(m.b), RTM_DELNEXTHOP, 0, 12, &n));
}

int main(int argc, char **argv)
{
	const char *dirs[2];

	if (argc != 3) {
		fprintf(stderr, "usage: gen_seeds RTNL_DIR FPM_DIR\n");
		return 2;
	}
	dirs[0] = argv[1];
	dirs[1] = argv[2];
	seed_routes(dirs);
	seed_nexthops(dirs);
	seed_write(dirs[0], "rtnl-all", all.b, all_len);
	seed_fpm(dirs[1], all.b, all_len);
	seed_write(dirs[1], "fpm-stream", stream.b, stream_len);
	return 0;
}
