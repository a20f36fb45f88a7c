/* SPDX-License-Identifier: MIT */
/*
 * FRR's FPM framing, as zebra's dplane_fpm_nl sends it (FRR fpm/fpm.h):
 * each frame is a 4-byte header, then netlink messages.
 *
 *   byte 0     version: 1
 *   byte 1     message type: 1 (netlink; 2, protobuf, is not spoken here)
 *   bytes 2-3  frame length, big-endian, header included: 4 to 65535
 *
 * A frame may carry several netlink messages (zebra sends a route
 * update's RTM_DELROUTE and RTM_NEWROUTE in one frame): walk the payload
 * with rtnl_next(). As FRR's fpm_msg_hdr_ok() requires, a netlink frame's
 * length is a multiple of 4, so that the netlink messages of every frame
 * in a stream stay aligned.
 *
 * Threads: no state; any thread.
 */
#ifndef LCFIB_FPM_H
#define LCFIB_FPM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

#define FPM_HDR_LEN          4
#define FPM_MAX_LEN          65535 /* the 16-bit length field */
#define FPM_VERSION          1
#define FPM_MSG_TYPE_NETLINK 1
#define FPM_DEFAULT_PORT     2620 /* zebra connects to 127.0.0.1:2620 */

/*
 * The frame at the start of @buf (@len bytes, 4-byte aligned so that the
 * payload is): returns 0 with its payload in *@payload and *@plen (0 for
 * an empty frame) and its whole length, to consume, in *@frame_len;
 * -EAGAIN when @len holds only part of it (read more and call again);
 * -EPROTO with a message for a version other than 1, a type other than
 * netlink, or a length below 4 or not a multiple of 4. A header is judged
 * as soon as its 4 bytes are in, so a stream of garbage fails at once.
 * After -EPROTO the stream cannot be framed any further.
 */
int fpm_frame_next(const uint8_t *buf, size_t len, size_t *frame_len, const uint8_t **payload,
		   size_t *plen, struct errbuf *err);

/*
 * Writes a frame header and @plen bytes of @payload into @buf; @payload
 * may already sit at buf + FPM_HDR_LEN (built in place). Returns the frame
 * length, or 0 when it does not fit in @size, or @plen is above
 * FPM_MAX_LEN - FPM_HDR_LEN or not a multiple of 4.
 */
size_t fpm_frame_encode(uint8_t *buf, size_t size, const void *payload, size_t plen);

#endif
