/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ifname.h"

/*
 * The pseudo-index table: names in index order, and an open-addressing
 * hash of their positions (+1, 0 is empty) kept at most half full.
 */
struct ifname_table {
	char (*names)[IF_NAMESIZE];
	uint32_t n, cap;
	uint32_t *slots;
	uint32_t n_slots; /* a power of two */
};

static pthread_mutex_t ifname_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ifname_table ifname_tab;

/* Pseudo-indexes IFNAME_VIRT_BASE..UINT32_MAX. */
#define IFNAME_VIRT_MAX ((uint32_t)(UINT32_MAX - IFNAME_VIRT_BASE + 1))

bool ifname_valid(const char *name)
{
	size_t n = strnlen(name, IF_NAMESIZE);

	if (n == 0 || n >= IF_NAMESIZE || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '/' || c <= ' ' || c == 0x7f)
			return false;
	}
	return true;
}

static uint32_t ifname_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

/* The slot of @name: where it is, or the empty one where it would go. */
static uint32_t *ifname_slot(const struct ifname_table *t, const char *name)
{
	uint32_t mask = t->n_slots - 1, i = ifname_hash(name) & mask;

	while (t->slots[i] && strcmp(t->names[t->slots[i] - 1], name) != 0)
		i = (i + 1) & mask;
	return &t->slots[i];
}

/* Makes room for one more name: grows the name array and rehashes at half full. */
static int ifname_table_reserve(struct ifname_table *t)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		void *names = realloc(t->names, (size_t)cap * sizeof(t->names[0]));

		if (!names)
			return -ENOMEM;
		t->names = names;
		t->cap = cap;
	}
	if (2 * (t->n + 1) > t->n_slots) {
		struct ifname_table nt = *t;

		nt.n_slots = t->n_slots ? 2 * t->n_slots : 32;
		nt.slots = calloc(nt.n_slots, sizeof(nt.slots[0]));
		if (!nt.slots)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->n; i++)
			*ifname_slot(&nt, t->names[i]) = i + 1;
		free(t->slots);
		*t = nt;
	}
	return 0;
}

/* Called with ifname_lock held. */
static int ifname_virtual(const char *name, uint32_t *ifindex)
{
	struct ifname_table *t = &ifname_tab;
	uint32_t *slot;
	int ret;

	if (t->n_slots) {
		slot = ifname_slot(t, name);
		if (*slot) {
			*ifindex = IFNAME_VIRT_BASE + *slot - 1;
			return 0;
		}
	}
	if (t->n == IFNAME_VIRT_MAX)
		return -ENOSPC;
	ret = ifname_table_reserve(t);
	if (ret)
		return ret;
	memcpy(t->names[t->n], name, strlen(name) + 1);
	*ifname_slot(t, name) = t->n + 1;
	*ifindex = IFNAME_VIRT_BASE + t->n++;
	return 0;
}

int ifname_resolve(const char *name, uint32_t *ifindex, struct errbuf *err)
{
	unsigned int real;
	int ret;

	if (!ifname_valid(name)) {
		err_set(err,
			"'%.*s' is not an interface name (1 to %u characters, no '/' or blanks)",
			IF_NAMESIZE * 2, name, IF_NAMESIZE - 1);
		return -EINVAL;
	}
	real = if_nametoindex(name);
	if (real && real < IFNAME_VIRT_BASE) {
		*ifindex = real;
		return 0;
	}
	pthread_mutex_lock(&ifname_lock);
	ret = ifname_virtual(name, ifindex);
	pthread_mutex_unlock(&ifname_lock);
	if (ret == -ENOSPC)
		err_set(err, "'%s': no interface index left for names this host does not have",
			name);
	else if (ret)
		err_set(err, "'%s': out of memory for interface names", name);
	return ret;
}

const char *ifname_name(uint32_t ifindex, char buf[IF_NAMESIZE])
{
	bool found = false;

	if (ifname_is_virtual(ifindex)) {
		pthread_mutex_lock(&ifname_lock);
		if (ifindex - IFNAME_VIRT_BASE < ifname_tab.n) {
			memcpy(buf, ifname_tab.names[ifindex - IFNAME_VIRT_BASE], IF_NAMESIZE);
			found = true;
		}
		pthread_mutex_unlock(&ifname_lock);
	} else if (ifindex) {
		found = if_indextoname(ifindex, buf) != NULL;
	}
	if (!found)
		snprintf(buf, IF_NAMESIZE, "if%u", ifindex);
	return buf;
}

void ifname_reset(void)
{
	pthread_mutex_lock(&ifname_lock);
	free(ifname_tab.names);
	free(ifname_tab.slots);
	memset(&ifname_tab, 0, sizeof(ifname_tab));
	pthread_mutex_unlock(&ifname_lock);
}
