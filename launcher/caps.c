/*
 * Capabilities: every one dropped before exec (effective, permitted, inheritable,
 * ambient, and with CAP_SETPCAP the bounding set too, with securebits locked so that
 * uid 0 regains nothing at exec), by the command, init, the guardian and the bridge.
 */
#include "landlock-run.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- Capability and securebits UAPI (CAP_SYS_ADMIN: landlock-run.h) ---- */

#define CAPABILITY_VERSION_3 0x20080522
#define CAP_SETPCAP 8

struct cap_header {
	uint32_t version;
	int pid;
};

struct cap_data {
	uint32_t effective;
	uint32_t permitted;
	uint32_t inheritable;
};

#define SECBIT_NOROOT (1U << 0)
#define SECBIT_NOROOT_LOCKED (1U << 1)
#define SECBIT_NO_SETUID_FIXUP (1U << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1U << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1U << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE (1U << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1U << 7)

/* ---- Dropping them ---- */

int has_capability(int cap)
{
	struct cap_header hdr = { CAPABILITY_VERSION_3, 0 };
	struct cap_data data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		fatal("capget: %s", strerror(errno));
	return (data[0].effective >> cap) & 1;
}

/* With an empty bounding set, no exec (setuid root included) can regain a capability. */
static void drop_bounding_set(void)
{
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			fatal("cannot drop capability %d from the bounding set: %s",
			      cap, strerror(errno));
	if (errno != EINVAL)
		fatal("cannot read the capability bounding set: %s", strerror(errno));
}

/* Stop uid 0 from meaning "all capabilities" at exec, and lock that in. */
static void lock_securebits(void)
{
	const unsigned wanted = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
		SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
		SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
		SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	int current = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (current < 0)
		fatal("cannot read securebits: %s", strerror(errno));
	if (prctl(PR_SET_SECUREBITS, (unsigned)current | wanted, 0, 0, 0) != 0)
		fatal("cannot set securebits: %s", strerror(errno));
}

void drop_capabilities(void)
{
	struct cap_header hdr = { CAPABILITY_VERSION_3, 0 };
	struct cap_data none[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

	/* Both steps need CAP_SETPCAP; an unprivileged caller has nothing to drop there. */
	if (has_capability(CAP_SETPCAP)) {
		drop_bounding_set();
		lock_securebits();
	}
	/*
	 * capset() below would also empty the ambient set; clearing it first
	 * keeps each step sufficient on its own.  EINVAL: kernel older than 4.3,
	 * which has no ambient set.
	 */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
	    errno != EINVAL)
		fatal("cannot clear ambient capabilities: %s", strerror(errno));
	if (syscall(SYS_capset, &hdr, none) != 0)
		fatal("cannot drop capabilities: %s", strerror(errno));
}
