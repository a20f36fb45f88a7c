/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a TCP stream from zebra's dplane_fpm_nl, framed by
 * fpm_frame_next() and each frame's netlink messages decoded (see
 * fuzz-check.h). A frame that is framed again by fpm_frame_encode() must
 * come out byte for byte the same.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/fpm.h"
#include "tests/fuzz/fuzz-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union {
		uint8_t b[FPM_MAX_LEN];
		uint32_t align;
	} again;
	const uint8_t *payload;
	struct errbuf err;
	size_t off = 0, flen, plen;
	int ret;

	while (off < size) {
		err.msg[0] = '\0';
		ret = fpm_frame_next(data + off, size - off, &flen, &payload, &plen, &err);
		if (ret == -EAGAIN)
			return 0;
		if (ret) {
			FUZZ_ASSERT(ret == -EPROTO);
			fuzz_refused(ret, &err);
			return 0;
		}
		FUZZ_ASSERT(flen >= FPM_HDR_LEN && flen <= size - off && flen <= FPM_MAX_LEN);
		FUZZ_ASSERT(payload == data + off + FPM_HDR_LEN && plen == flen - FPM_HDR_LEN);
		FUZZ_ASSERT(fpm_frame_encode(again.b, sizeof(again.b), payload, plen) == flen);
		FUZZ_ASSERT(!memcmp(again.b, data + off, flen));
		fuzz_netlink(payload, plen);
		off += flen;
	}
	return 0;
}
