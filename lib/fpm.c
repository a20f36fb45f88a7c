/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "lib/fpm.h"

/* Netlink's alignment (NLMSG_ALIGNTO), which FPM's netlink frames keep. */
#define FPM_ALIGNTO 4

int fpm_frame_next(const uint8_t *buf, size_t len, size_t *frame_len, const uint8_t **payload,
		   size_t *plen, struct errbuf *err)
{
	size_t flen;

	if (len < FPM_HDR_LEN)
		return -EAGAIN;
	if (buf[0] != FPM_VERSION) {
		err_set(err, "FPM version %u, expected %u", buf[0], FPM_VERSION);
		return -EPROTO;
	}
	if (buf[1] != FPM_MSG_TYPE_NETLINK) {
		err_set(err, "FPM message type %u, expected %u (netlink)", buf[1],
			FPM_MSG_TYPE_NETLINK);
		return -EPROTO;
	}
	flen = (size_t)buf[2] << 8 | buf[3];
	if (flen < FPM_HDR_LEN || flen % FPM_ALIGNTO) {
		err_set(err, "FPM frame length %zu, expected a multiple of %u from %u", flen,
			FPM_ALIGNTO, FPM_HDR_LEN);
		return -EPROTO;
	}
	if (len < flen)
		return -EAGAIN;
	*frame_len = flen;
	*payload = buf + FPM_HDR_LEN;
	*plen = flen - FPM_HDR_LEN;
	return 0;
}

size_t fpm_frame_encode(uint8_t *buf, size_t size, const void *payload, size_t plen)
{
	size_t flen = FPM_HDR_LEN + plen;

	if (plen > FPM_MAX_LEN - FPM_HDR_LEN || plen % FPM_ALIGNTO || size < flen)
		return 0;
	if (plen)
		memmove(buf + FPM_HDR_LEN, payload, plen);
	buf[0] = FPM_VERSION;
	buf[1] = FPM_MSG_TYPE_NETLINK;
	buf[2] = (uint8_t)(flen >> 8);
	buf[3] = (uint8_t)flen;
	return flen;
}
