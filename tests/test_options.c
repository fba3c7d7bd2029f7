/* test_options: each value of a choice option parses to the enum its module reads; other values are refused. */
#include <errno.h>
#include <string.h>

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

int main(void)
{
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
