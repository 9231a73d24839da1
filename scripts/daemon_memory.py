"""Finding an fslab daemon and reading its resident memory, for the
benchmark scripts (bench-meta, bench-memory)."""

import os


def daemon_pids(image):
    """Processes holding `image` open: the daemon serving it."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == image:
                    pids.append(int(pid))
                    break
        except OSError:
            continue
    return pids


def rss_mib(pids):
    """The resident memory (VmRSS) of `pids` together, in MiB; a process
    that has ended counts nothing."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024
