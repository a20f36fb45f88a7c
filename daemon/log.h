/* SPDX-License-Identifier: MIT */
/*
 * lcfibd's log: stderr in the foreground, syslog (facility daemon) in the
 * background, with syslog's levels. Any thread.
 */
#ifndef LCFIB_DAEMON_LOG_H
#define LCFIB_DAEMON_LOG_H

#include <stdbool.h>
#include <syslog.h>

void log_open(bool to_syslog);
void log_close(void);
/* Logging to syslog, errors also go to stderr (start-up in the background). */
void log_errors_to_stderr(bool on);
void log_set_level(int level);
int log_get_level(void);
/* Parses "error", "warning", "notice", "info" or "debug"; -1 when none. */
int log_level_parse(const char *s);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)    log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)   log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)   log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)  log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
