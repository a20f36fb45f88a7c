/* SPDX-License-Identifier: MIT */
/*
 * The shell: readline with history and completion on a terminal, plain
 * lines from a pipe or file (a script). A failed command does not end it.
 * '?' lists what may come next, with each word's description.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "cli/cli.h"

#define CLI_PROMPT      "lcfib> "
#define CLI_HISTORY     ".lcfibctl_history"
#define CLI_HISTORY_MAX 1000
#define CLI_WORDS_MAX   256
#define CLI_LINE_MAX    65536

/* readline's callbacks take no argument of ours */
static struct cli *cli_rl;

/* ----------------------------------------------------------------- words */

static bool cli_blank_char(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Copies one word from *@s to *@o; returns -EINVAL for an unterminated quote. */
static int cli_split_word(const char **s, char **o)
{
	const char *p = *s;
	char q;

	while (*p && !cli_blank_char(*p)) {
		if (*p == '\\' && p[1]) {
			*(*o)++ = p[1];
			p += 2;
		} else if (*p == '\'' || *p == '"') {
			q = *p++;
			for (; *p && *p != q; p++) {
				if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				*(*o)++ = *p;
			}
			if (*p != q)
				return -EINVAL;
			p++;
		} else {
			*(*o)++ = *p++;
		}
	}
	*(*o)++ = '\0';
	*s = p;
	return 0;
}

int cli_split(const char *line, char *buf, size_t size, char **words, int max)
{
	const char *s = line;
	char *o = buf;
	int n = 0;

	/* quotes and escapes only ever shorten a word, and each gets one NUL */
	if (strlen(line) + 1 > size)
		return -E2BIG;
	for (;;) {
		while (cli_blank_char(*s))
			s++;
		if (!*s || *s == '#')
			return n;
		if (n == max)
			return -E2BIG;
		words[n++] = o;
		if (cli_split_word(&s, &o))
			return -EINVAL;
	}
}

/* ------------------------------------------------------------ completion */

struct cli_matches {
	char **v;
	char **help; /* copies: candidates' help may live in a caller's buffer */
	size_t n, cap;
};

static struct cli_matches cli_found;

static void cli_matches_add(struct cli_cands *c, const char *word, const char *help)
{
	struct cli_matches *m = c->arg;
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->v[i], word))
			return;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 32;
		char **v = realloc(m->v, cap * sizeof(*v));
		char **h = v ? realloc(m->help, cap * sizeof(*h)) : NULL;

		if (v)
			m->v = v;
		if (!h)
			return;
		m->help = h;
		m->cap = cap;
	}
	m->v[m->n] = strdup(word);
	if (!m->v[m->n])
		return;
	m->help[m->n++] = help ? strdup(help) : NULL;
}

static void cli_matches_clear(struct cli_matches *m)
{
	while (m->n) {
		m->n--;
		free(m->v[m->n]);
		free(m->help[m->n]);
	}
}

/*
 * Collects what may follow the first @point bytes of @line: the words
 * before the cursor, and the one under it as the partial word. Returns
 * the count, or -EINVAL when the words do not split (an open quote).
 */
static int cli_collect(const char *line, int point, struct cli_matches *m)
{
	static char text[CLI_LINE_MAX], buf[CLI_LINE_MAX];
	char *words[CLI_WORDS_MAX];
	struct cli_cands c = { .add = cli_matches_add, .arg = m, .partial = "" };
	int n;

	cli_matches_clear(m);
	snprintf(text, sizeof(text), "%.*s", point, line);
	n = cli_split(text, buf, sizeof(buf), words, CLI_WORDS_MAX);
	if (n < 0)
		return n;
	if (point && !cli_blank_char(text[point - 1]) && n)
		c.partial = words[--n];
	cli_complete(cli_rl, n, words, &c);
	return (int)m->n;
}

static char *cli_rl_generator(const char *text, int state)
{
	static size_t i;

	(void)text;
	if (!state)
		i = 0;
	return i < cli_found.n ? strdup(cli_found.v[i++]) : NULL;
}

static char **cli_rl_complete(const char *text, int start, int end)
{
	(void)start;
	rl_attempted_completion_over = 1; /* no file names unless we offer them */
	/* the partial word cli_collect() finds before @end is @text */
	if (cli_collect(rl_line_buffer, end, &cli_found) <= 0)
		return NULL;
	if (cli_found.n == 1 && cli_found.v[0][strlen(cli_found.v[0]) - 1] == '/')
		rl_completion_append_character = '\0';
	return rl_completion_matches(text, cli_rl_generator);
}

static void cli_print_choices(const struct cli_matches *m)
{
	char dsc[512];
	size_t i;
	int width = 0;

	for (i = 0; i < m->n; i++)
		if ((int)strlen(m->v[i]) > width)
			width = (int)strlen(m->v[i]);
	if (width > 24)
		width = 24;
	for (i = 0; i < m->n; i++)
		printf("  %-*s  %s\n", width, m->v[i],
		       m->help[i] ? cli_schema_dsc(m->help[i], true, dsc, sizeof(dsc)) : "");
	if (!m->n)
		printf("  (nothing more)\n");
}

/* The '?' key: what may come next, without changing the line. */
static int cli_rl_help(int count, int key)
{
	(void)count;
	(void)key;
	printf("\n");
	if (cli_collect(rl_line_buffer, rl_point, &cli_found) >= 0)
		cli_print_choices(&cli_found);
	rl_on_new_line();
	return 0;
}

/* ------------------------------------------------------------------ loop */

/* Runs one line; returns 0, -errno for a failed command, or 1 to leave. */
static int cli_shell_line(struct cli *cli, const char *line)
{
	static char buf[CLI_LINE_MAX];
	char *words[CLI_WORDS_MAX];
	int n = cli_split(line, buf, sizeof(buf), words, CLI_WORDS_MAX);

	if (n == -EINVAL)
		return cli_usage(cli, "a quote is not closed");
	if (n < 0)
		return cli_usage(cli, "the line is too long");
	if (!n)
		return 0;
	if (!strcmp(words[0], "quit") || !strcmp(words[0], "exit"))
		return 1;
	if (n > 1 && !strcmp(words[n - 1], "?")) {
		/* `set feeds ?`: the words that may follow */
		struct cli_cands c = { .add = cli_matches_add, .arg = &cli_found, .partial = "" };

		cli_matches_clear(&cli_found);
		cli_complete(cli, n - 1, words, &c);
		cli_print_choices(&cli_found);
		return 0;
	}
	return cli_run(cli, n, words);
}

static void cli_history_path(char *buf, size_t size)
{
	const char *home = getenv("HOME");

	if (home && *home)
		snprintf(buf, size, "%s/%s", home, CLI_HISTORY);
	else
		buf[0] = '\0';
}

static int cli_shell_tty(struct cli *cli)
{
	char hist[4096], *line;

	cli_history_path(hist, sizeof(hist));
	rl_readline_name = CLI_NAME;
	rl_attempted_completion_function = cli_rl_complete;
	rl_completer_word_break_characters = (char *)" \t";
	rl_bind_key('?', cli_rl_help);
	stifle_history(CLI_HISTORY_MAX);
	if (hist[0])
		read_history(hist);
	while ((line = readline(CLI_PROMPT))) {
		HIST_ENTRY *last =
			history_length ? history_get(history_base + history_length - 1) : NULL;
		int ret;

		if (*line && (!last || strcmp(last->line, line)))
			add_history(line);
		ret = cli_shell_line(cli, line);
		free(line);
		fflush(stdout);
		if (ret == 1)
			break;
	}
	if (!line)
		printf("\n");
	if (hist[0])
		write_history(hist);
	return CLI_EXIT_OK;
}

/* A script: the status is that of the last command that failed, else 0. */
static int cli_shell_script(struct cli *cli)
{
	char *line = NULL;
	size_t cap = 0;
	int status = CLI_EXIT_OK, ret;

	while (getline(&line, &cap, stdin) > 0) {
		ret = cli_shell_line(cli, line);
		if (ret == 1)
			break;
		if (ret)
			status = cli_exit_status(ret);
	}
	free(line);
	return status;
}

int cli_shell(struct cli *cli)
{
	int status;

	cli->shell = true;
	cli_rl = cli;
	status = isatty(STDIN_FILENO) ? cli_shell_tty(cli) : cli_shell_script(cli);
	cli_matches_clear(&cli_found);
	free(cli_found.v);
	free(cli_found.help);
	return status;
}
