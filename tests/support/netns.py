"""The queue checker's own network: a network namespace, one loopback address and one cgroup per process, iptables.

The checker's run (``tests/support/checker_run.py``) is started with ``unshare -n``: a network namespace of its own
with only ``lo``, brought up here, so no rule ever touches the host's. etcd listens on 127.0.0.10 and node i on
127.0.0.1i. Inside one namespace every connection over ``lo`` leaves from 127.0.0.1 whatever address the process
listens on, so ``-s A`` cannot name a sender; each process is started in a cgroup of its own instead and a pair is
cut by dropping what one side's cgroup sends to the other's address, both ways
(``iptables -A OUTPUT -m cgroup --path halfmq-…-n1 -d 127.0.0.12 -j DROP``); ``heal`` deletes those rules (-D).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ETCD_HOST = "127.0.0.10"
NODE_HOSTS = ("127.0.0.11", "127.0.0.12", "127.0.0.13")


def unshare_command(argv: list[str]) -> list[str] | str:
    """``argv`` run inside a new network namespace with ``lo`` up, or why that cannot be done here."""
    if os.geteuid() != 0:
        return "not root: cannot create a network namespace"
    for tool in ("unshare", "ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    root = cgroup2_root()
    if root is None:
        return "no cgroup2 hierarchy to match senders with"
    probe = root / f"halfmq-checker-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as cannot:
        return f"cannot create a cgroup under {root}: {cannot}"
    tried = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up && iptables -w -A OUTPUT -m cgroup --path / -j ACCEPT"],
                           capture_output=True, text=True)
    if tried.returncode != 0:
        return f"unshare -n with iptables' cgroup match failed: {tried.stderr.strip() or tried.stdout.strip()}"
    # the run is told which namespace it started from, and checks it is elsewhere before adding a rule
    return ["unshare", "-n", "env", f"{OUTER_NETNS}={own_netns()}", "sh", "-c", 'ip link set lo up && exec "$@"', "netns", *argv]


OUTER_NETNS = "HALFMQ_CHECKER_OUTER_NETNS"  # the starting process's namespace, which partitions must never be in


def own_netns() -> str:
    return os.readlink("/proc/self/ns/net")


def cgroup2_root() -> Path | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        _, where, kind, *_ = line.split()
        if kind == "cgroup2":
            return Path(where)
    return None


class Partitions:
    """One cgroup per process (``wrap`` starts a command in it), and pair cuts between them by iptables."""

    def __init__(self, hosts: dict[str, str], tag: str | None = None) -> None:
        outer = os.environ.get(OUTER_NETNS)
        assert outer and outer != own_netns(), "partitions only inside a network namespace of the run's own (unshare_command)"
        root = cgroup2_root()
        assert root is not None, "no cgroup2 hierarchy"
        self.hosts = hosts  # name ("n1", "etcd") -> its address
        self.tag = tag or f"halfmq-checker-{os.getpid()}"
        self.groups = {name: root / f"{self.tag}-{name}" for name in hosts}
        for group in self.groups.values():
            group.mkdir(exist_ok=True)
        self.rules: list[list[str]] = []

    def wrap(self, name: str, argv: list[str]) -> list[str]:
        """``argv`` started inside ``name``'s cgroup, so every socket it opens is matched as ``name``'s."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.groups[name] / "cgroup.procs"), *argv]

    def _path(self, name: str) -> str:
        root = cgroup2_root()
        assert root is not None
        return "/" + str(self.groups[name].relative_to(root))

    def cut(self, a: str, b: str) -> list[list[str]]:
        """Drop what ``a`` sends to ``b`` and what ``b`` sends to ``a``; the rules, for ``heal``."""
        rules = [["OUTPUT", "-m", "cgroup", "--path", self._path(x), "-d", self.hosts[y], "-j", "DROP"] for x, y in ((a, b), (b, a))]
        for rule in rules:
            iptables("-A", *rule)
        self.rules += rules
        return rules

    def heal(self, rules: list[list[str]]) -> None:
        for rule in rules:
            iptables("-D", *rule)
            self.rules.remove(rule)

    def heal_all(self) -> None:
        for rule in list(self.rules):
            iptables("-D", *rule)
        self.rules.clear()

    def remove(self) -> None:
        """Heal everything and remove the cgroups (once their processes have exited)."""
        self.heal_all()
        for group in self.groups.values():
            try:
                group.rmdir()
            except OSError as busy:
                print(f"cannot remove {group}: {busy}", file=sys.stderr)


def iptables(*args: str) -> None:
    """iptables in this process's network namespace, which must not be the host's (see ``unshare_command``)."""
    subprocess.run(["iptables", "-w", *args], check=True, capture_output=True)
