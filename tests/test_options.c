/* test_options: each value of a choice option parses to the enum its module reads, other values are refused; defaults, the environment (first of a name, upper case only, in scope) and lists on the command line. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "evict.h"
#include "options.h"
#include "placement.h"
#include "prefetch.h"
#include "testing.h"
#include "wakeup.h"

static struct options o; /* large: not on the stack */

/* name=value sets option id to want; origin "test" */
static void choice(const char *name, enum opt_id id, const char *value, unsigned want)
{
	CHECK(options_set(&o, name, value, "test") == 0);
	CHECK(opt_num(&o, id) == want && !strcmp(opt_str(&o, id), value));
}

/* options_configure for comex run with env as the whole environment */
static int configure_with(char **env, int argc, char **argv, struct options *out)
{
	char **saved = environ;
	int first, err;

	environ = env;
	err = options_configure(out, SC_RUN, argc, argv, &first);
	environ = saved;
	return err;
}

static void test_sources(void)
{
	static struct options c;
	char *env[] = { "COMEX_SCHED=slice", "COMEX_SCHED=fifo", "COMEX_sched=fifo", "COMEX_NOT_AN_OPTION=1",
			"COMEX_POOL=banana", "COMEX_PREFETCH_POLICY=window", NULL };
	char *argv[] = { "run", "--memnode", "a:1", "--memnode=b:2", "--", "prog", NULL };

	/* the first of a name, as getenv; lower case and unknown names ignored;
	 * pool (not comex run's) not even parsed */
	CHECK(configure_with(env, 6, argv, &c) == 0);
	CHECK(opt_num(&c, OPT_SCHED) == WAKEUP_SLICE && !strcmp(c.v[OPT_SCHED].origin, "environment"));
	CHECK(opt_num(&c, OPT_PREFETCH_POLICY) == PREFETCH_WINDOW);
	CHECK(!strcmp(opt_str(&c, OPT_MEMNODE), "a:1,b:2")); /* given twice on one command line: appended */
	CHECK(!strcmp(opt_str(&c, OPT_POOL), "1G") && !strcmp(c.v[OPT_POOL].origin, "default"));
	/* no environment at all; a bad value names its source */
	CHECK(configure_with(NULL, 1, argv, &c) == 0 && !strcmp(opt_str(&c, OPT_MEMNODE), "127.0.0.1:7300"));
	CHECK(configure_with((char *[]){ "COMEX_SCHED=sometimes", NULL }, 1, argv, &c) == -EINVAL);
	/* the default's own text given again by the same source replaces, then appends */
	static const char origin[] = "test"; /* one pointer: a source is known by it */

	CHECK(configure_with(NULL, 1, argv, &c) == 0);
	CHECK(options_set(&c, "memnode", "127.0.0.1:7300", origin) == 0 && options_set(&c, "memnode", "c:3", origin) == 0);
	CHECK(!strcmp(opt_str(&c, OPT_MEMNODE), "127.0.0.1:7300,c:3"));
}

int main(void)
{
	test_sources();
	choice("evict-policy", OPT_EVICT_POLICY, "clock", EVICT_CLOCK);
	choice("evict-policy", OPT_EVICT_POLICY, "fifo", EVICT_FIFO);
	choice("prefetch-policy", OPT_PREFETCH_POLICY, "adaptive", PREFETCH_ADAPTIVE);
	choice("prefetch-policy", OPT_PREFETCH_POLICY, "window", PREFETCH_WINDOW);
	choice("placement", OPT_PLACEMENT, "hash", PLACEMENT_HASH);
	choice("placement", OPT_PLACEMENT, "p2c", PLACEMENT_P2C);
	choice("placement", OPT_PLACEMENT, "weighted", PLACEMENT_WEIGHTED);
	choice("sched", OPT_SCHED, "normal", WAKEUP_NORMAL);
	choice("sched", OPT_SCHED, "slice", WAKEUP_SLICE);
	choice("sched", OPT_SCHED, "fifo", WAKEUP_FIFO);
	/* a refused value leaves the option as it was */
	CHECK(options_set(&o, "sched", "FIFO", "test") == -EINVAL && opt_num(&o, OPT_SCHED) == WAKEUP_FIFO);
	CHECK(options_set(&o, "placement", "", "test") == -EINVAL);
	CHECK(options_set(&o, "placement", "p2", "test") == -EINVAL);
	CHECK(options_set(&o, "placement", "weighted|hash", "test") == -EINVAL);
	CHECK(options_set(&o, "evict-policy", "lru", "test") == -EINVAL);
	CHECK(options_set(&o, "data-path", "rma", "test") == 0 && opt_num(&o, OPT_DATA_PATH) == 1);
	CHECK(options_set(&o, "fault-handlers", "per-cpu", "test") == 0 && opt_num(&o, OPT_FAULT_HANDLERS) == 0);
	return 0;
}
