"""A real single-node SLURM cluster for tests: munged (as the munge user), slurmctld and
slurmd (as root), every state/spool/log/pid path in one temporary folder, free ports, and a
node that declares `Gres=gpu:4` backed by fake character devices (`mknod c 1 3`, as
/dev/null), so `--gres=gpu:N` jobs get CUDA_VISIBLE_DEVICES without any GPU. The node also
declares more cores and memory than the machine has (`SlurmdParameters=config_overrides`),
as a GPU node would: the batch's jobs ask for 4 cores and 26G each by default (what a
grading may use), and CR_CPU counts the cores only, so memory is checked, never consumed.

Timing is tuned for tests: the scheduler runs on every submit/finish and at least every
second; KillWait is short so a timed-out or cancelled job finishes quickly.

Usage: `with SlurmCluster(gpus=4) as cluster: ...`; `cluster.env` holds SLURM_CONF for the
client commands (sbatch, scontrol, scancel).
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")


def missing_tools() -> list[str]:
    missing = [tool for tool in DAEMONS if not shutil.which(tool, path=os.environ.get("PATH", "")
                                                            + ":/usr/sbin:/sbin")]
    try:
        pwd.getpwnam("munge")
    except KeyError:
        missing.append("user munge")
    return missing


def _which(tool: str) -> str:
    return shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or tool


def _free_ports(count: int) -> list[int]:
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


class ClusterError(RuntimeError):
    pass


class SlurmCluster:
    def __init__(self, gpus: int = 4, cpus: int = 32, partition: str = "gpu",
                 memory_mib: int = 128 * 1024):
        self.gpus, self.cpus, self.partition = gpus, cpus, partition
        self.memory_mib = memory_mib
        self.node = socket.gethostname().split(".")[0]
        self.root: Path | None = None
        self.processes: list[subprocess.Popen] = []
        self.env: dict[str, str] = {}

    # -- set-up ---------------------------------------------------------------------------
    def __enter__(self) -> "SlurmCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        # World-traversable (munged runs as another user and must reach its own folder).
        self.root = Path(tempfile.mkdtemp(prefix="pdl-slurm-"))
        self.root.chmod(0o755)
        munge = pwd.getpwnam("munge")
        mdir = self.root / "munge"
        mdir.mkdir(mode=0o700)
        key = mdir / "munge.key"
        subprocess.run([_which("mungekey"), "--create", f"--keyfile={key}"], check=True,
                       capture_output=True)
        for path in (mdir, key):
            os.chown(path, munge.pw_uid, munge.pw_gid)
        key.chmod(0o600)
        sock_dir = self.root / "munge-run"
        sock_dir.mkdir(mode=0o755)
        os.chown(sock_dir, munge.pw_uid, munge.pw_gid)
        self.munge_socket = sock_dir / "munge.socket"
        self._spawn([_which("munged"), "--foreground", f"--socket={self.munge_socket}",
                     f"--key-file={key}", f"--log-file={mdir / 'munged.log'}",
                     f"--pid-file={sock_dir / 'munged.pid'}", f"--seed-file={mdir / 'munged.seed'}",
                     "--num-threads=2"],
                    user=munge, log=self.root / "munged.out")
        self._wait_for(lambda: self.munge_socket.exists(), "munged", self.root / "munged.out")

        for sub in ("state", "spool", "log", "run", "dev"):
            (self.root / sub).mkdir()
        for index in range(self.gpus):
            os.mknod(self.root / "dev" / f"gpu{index}", 0o666 | 0o020000, os.makedev(1, 3))
        ctld_port, slurmd_port = _free_ports(2)
        self.conf = self.root / "slurm.conf"
        self.jobcomp = self.root / "log" / "jobcomp.txt"
        self.conf.write_text(self._slurm_conf(ctld_port, slurmd_port))
        (self.root / "gres.conf").write_text(
            "AutoDetect=off\n"
            + (f"Name=gpu File={self.root / 'dev'}/gpu[0-{self.gpus - 1}]\n" if self.gpus else ""))
        self.env = {"SLURM_CONF": str(self.conf)}
        env = dict(os.environ, **self.env)
        self._spawn([_which("slurmctld"), "-D", "-i", "-f", str(self.conf)], env=env,
                    log=self.root / "log" / "slurmctld.out")
        self._wait_for(self._controller_up, "slurmctld", self.root / "log" / "slurmctld.log")
        self._spawn([_which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node], env=env,
                    log=self.root / "log" / "slurmd.out")
        self._wait_for(self._node_idle, "slurmd", self.root / "log" / "slurmd.log")

    def _slurm_conf(self, ctld_port: int, slurmd_port: int) -> str:
        r = self.root
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        return f"""\
ClusterName=pdltest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,sched_min_interval=0,bf_interval=1
MessageTimeout=5
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
OverTimeLimit=0
MinJobAge=600
SlurmdParameters=config_overrides
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mib}{gres} State=UNKNOWN
PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
"""

    def _spawn(self, argv: list[str], *, log: Path, env: dict | None = None, user=None) -> None:
        preexec = None
        if user is not None:
            def preexec(uid=user.pw_uid, gid=user.pw_gid):
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL, env=env,
                                                   preexec_fn=preexec, start_new_session=True))

    def _wait_for(self, ready, what: str, log: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise ClusterError(f"{process.args[0]} exited ({process.returncode}) while "
                                       f"starting {what}:\n{_tail(log)}")
            if ready():
                return
            time.sleep(0.1)
        raise ClusterError(f"{what} did not come up in {timeout:g} s:\n{_tail(log)}")

    def scontrol(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([_which("scontrol"), *args], capture_output=True, text=True,
                              env=dict(os.environ, **self.env), timeout=30)

    def _controller_up(self) -> bool:
        return self.scontrol("ping").returncode == 0

    def _node_idle(self) -> bool:
        done = self.scontrol("show", "node", self.node, "-o")
        return done.returncode == 0 and "State=IDLE" in done.stdout

    # -- tear-down ------------------------------------------------------------------------
    def stop(self) -> None:
        # Reverse order: slurmd (and its job steps), slurmctld, munged.
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes.clear()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"
