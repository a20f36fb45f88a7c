/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <urcu/uatomic.h>

#include "daemon/log.h"

static bool log_syslog;
static bool log_stderr_errors;
static int log_level = LOG_NOTICE;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const log_names[] = {
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_open(bool to_syslog)
{
	log_syslog = to_syslog;
	if (to_syslog)
		openlog("lcfibd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_errors_to_stderr(bool on)
{
	log_stderr_errors = on;
}

void log_close(void)
{
	if (log_syslog)
		closelog();
}

void log_set_level(int level)
{
	uatomic_set(&log_level, level);
}

int log_get_level(void)
{
	return uatomic_read(&log_level);
}

int log_level_parse(const char *s)
{
	for (int l = LOG_ERR; l <= LOG_DEBUG; l++) {
		if (log_names[l] && strcmp(s, log_names[l]) == 0)
			return l;
	}
	return -1;
}

const char *log_level_name(int level)
{
	return level >= LOG_ERR && level <= LOG_DEBUG ? log_names[level] : "?";
}

void log_msg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > log_get_level())
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(level, "%s", buf);
		if (level <= LOG_ERR && log_stderr_errors)
			fprintf(stderr, "lcfibd: %s\n", buf);
		return;
	}
	{
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		pthread_mutex_lock(&log_lock);
		fprintf(stderr, "%s.%03ld lcfibd %s: %s\n", when, ts.tv_nsec / 1000000,
			log_level_name(level), buf);
		pthread_mutex_unlock(&log_lock);
	}
}
