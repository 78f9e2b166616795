/* caps.c: the capability test, and every capability dropped (bounding set and
 * securebits too, where the caller may). */
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define CAP_SETPCAP 8
/* SECBIT_NOROOT, _NO_SETUID_FIXUP, _KEEP_CAPS_LOCKED, _NO_CAP_AMBIENT_RAISE, and locks. */
#define SECUREBITS_WANTED 0xefU

static unsigned long long status_mask(const char *field)
{
	return strtoull(unit_status(field), NULL, 16);
}

int main(void)
{
	unsigned long long effective = status_mask("CapEff");
	int had_setpcap = (effective >> CAP_SETPCAP) & 1, pid;

	CHECK_EQ(has_capability(CAP_SYS_ADMIN), (effective >> CAP_SYS_ADMIN) & 1);
	CHECK_EQ(has_capability(CAP_SETPCAP), had_setpcap);
	CHECK_EQ(has_capability(0), effective & 1);
	pid = unit_fork();
	if (pid == 0) {
		unsigned long long bounding = status_mask("CapBnd");

		drop_capabilities();
		CHECK_EQ(status_mask("CapEff"), 0);
		CHECK_EQ(status_mask("CapPrm"), 0);
		CHECK_EQ(status_mask("CapInh"), 0);
		CHECK_EQ(status_mask("CapAmb"), 0);
		CHECK_EQ(has_capability(CAP_SYS_ADMIN), 0);
		if (had_setpcap) {
			/* Nothing an exec could regain, uid 0 included, and that locked in. */
			CHECK_EQ(status_mask("CapBnd"), 0);
			CHECK_EQ((unsigned)prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) & SECUREBITS_WANTED,
				 SECUREBITS_WANTED);
			CHECK(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0) != 0);
		} else {
			/* An unprivileged caller cannot change those; they stay as they were. */
			CHECK_EQ(status_mask("CapBnd"), bounding);
		}
		/* Dropping again (init, then the command) is harmless. */
		drop_capabilities();
		CHECK_EQ(status_mask("CapEff"), 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	/* The test's own process is untouched. */
	CHECK_EQ(status_mask("CapEff"), effective);
	return unit_done();
}
