/* noreclaim: the three settings of a process on the reclaim path (D56). */
#include "noreclaim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57 /* Linux 5.6 */
#endif

/* -1000: the OOM killer never picks us; killing the process that holds
 * swapped pages would kill every process whose pages they are */
static int oom_exempt(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	int ok = fd >= 0 && write(fd, "-1000", 5) == 5;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

int noreclaim_enter(const char *who)
{
	int failed = 0;

	if (oom_exempt()) {
		log_warn("cannot make the %s exempt from the OOM killer (oom_score_adj -1000): %m", who);
		failed++;
	}
	/* its allocations never enter I/O reclaim, which may wait on us */
	if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0)) {
		log_warn("cannot mark the %s an I/O flusher (PR_SET_IO_FLUSHER): %m; under memory pressure it may "
			 "wait on its own swap device (needs CAP_SYS_RESOURCE)", who);
		failed++;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		log_warn("cannot lock the %s's memory (mlockall): %m; raise RLIMIT_MEMLOCK or run as root", who);
		failed++;
	}
	return failed;
}
