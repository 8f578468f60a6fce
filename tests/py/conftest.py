"""conftest.py — the Python test harness: the real 2.x client (queen-mq) against the real binary.

One throwaway PostgreSQL cluster per session (initdb + pg_ctl on a free loopback port, as
tests/integration/harness.mjs does); one database and one broker (the sanitizer build,
QUEEN_BIN or build/asan/queen) per test module. Every broker is stopped with SIGTERM whatever
the outcome; it must exit 0 and its log must hold no sanitizer report, else the module's last
test errors. scripts/run-py.sh runs this under a timeout and stops whatever a killed run left
behind (the pids and data directories are written to $QUEEN_PY_STATE).

Fixtures: `broker` (url, log, env), `client` (a `queen.Queen(url)`, closed after the test),
`http` (an httpx client on the broker for raw calls), `qname` (a queue name unique to the test).
Async tests run on asyncio through anyio's pytest plugin (anyio comes with httpx).
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
QUEEN_BIN = os.environ.get("QUEEN_BIN") or str(ROOT / "build" / "asan" / "queen")
STATE = os.environ.get("QUEEN_PY_STATE")
IS_ROOT = os.geteuid() == 0
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name: str) -> str:
    base = Path("/usr/lib/postgresql")
    versions = sorted((v for v in base.iterdir() if (v / "bin" / name).exists()), key=lambda v: -int(v.name))
    if not versions:
        raise RuntimeError(f"no PostgreSQL {name} under {base}")
    return str(versions[0] / "bin" / name)


def _as_pg(args: list[str]) -> subprocess.CompletedProcess:
    cmd = ["runuser", "-u", "postgres", "--", *args] if IS_ROOT else args
    r = subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {r.stderr or r.stdout}")
    return r


def _note(kind: str, value: str) -> None:
    """Tells scripts/run-py.sh what to stop if this process dies without its teardown."""
    if STATE:
        with open(os.path.join(STATE, kind), "a") as f:
            f.write(value + "\n")


class Postgres:
    def __init__(self) -> None:
        # under /tmp, traversable by the postgres user when the tests run as root
        self.dir = tempfile.mkdtemp(prefix="queen-pypg-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        os.mkdir(self.sock)
        if IS_ROOT:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        _note("pgdata", self.data)
        _as_pg([_pg_bin("initdb"), "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                "--locale=C", "--no-sync"])
        self.port = free_port()
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                "-F -c synchronous_commit=off")
        _as_pg([_pg_bin("pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-o", opts, "start"])

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def psql(self, sql: str, db: str = "postgres") -> str:
        r = _as_pg(["psql", "-h", self.sock, "-p", str(self.port), "-U", "postgres", "-d", db, "-At", "-c", sql])
        return r.stdout.strip()

    def destroy(self) -> None:
        try:
            _as_pg([_pg_bin("pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop"])
        except Exception:  # noqa: BLE001 - already stopped, or stop it harder
            subprocess.run(["runuser", "-u", "postgres", "--", _pg_bin("pg_ctl"), "-D", self.data, "-m",
                            "immediate", "-w", "stop"] if IS_ROOT else
                           [_pg_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"],
                           cwd="/", capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


class Broker:
    """One `queen` process on a free port, on its own database of the session's cluster."""

    def __init__(self, pg: Postgres, db: str, env: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = tempfile.mkdtemp(prefix="queen-pydata-", dir="/tmp")
        _note("dirs", self.data)
        self.log_path = os.path.join(self.data, "queen.log")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "PORT": str(self.port),
            "HOST": "127.0.0.1",
            "QUEEN_DATA_DIR": self.data,
            "QUEEN_PG_URL": pg.url(db),
            "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
            "UBSAN_OPTIONS": "print_stacktrace=1",
            **(env or {}),
        }
        self._logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen([QUEEN_BIN], env=self.env, stdout=self._logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        _note("pids", str(self.proc.pid))
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"queen exited during boot ({self.proc.returncode}):\n{self.log()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"queen not healthy in 60 s:\n{self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        self._logf.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self) -> None:
        """SIGTERM; raises when the node does not exit 0 or its log holds a sanitizer report."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(f"queen did not exit within 30 s of SIGTERM:\n{self.log()}")
            text = self.log()
            if SANITIZER.search(text):
                raise RuntimeError(f"sanitizer report in the node's log:\n{text}")
            if code != 0:
                raise RuntimeError(f"queen exited with {code}:\n{text}")
        finally:
            self._logf.close()
            shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture(scope="session")
def pg():
    if not os.access(QUEEN_BIN, os.X_OK):
        pytest.exit(f"{QUEEN_BIN} is not built (make build/asan/queen)", returncode=2)
    p = Postgres()
    try:
        yield p
    finally:
        p.destroy()


_db_seq = 0


@pytest.fixture(scope="module")
def broker(pg, request):
    """The module's broker, on a database of its own (created here: faster than a cluster).
    A module sets BROKER_ENV = {...} for variables of its own (e.g. RETENTION_INTERVAL)."""
    global _db_seq
    _db_seq += 1
    db = f"m{_db_seq}_{os.getpid()}"
    pg.psql(f"CREATE DATABASE {db}")
    b = Broker(pg, db, getattr(request.module, "BROKER_ENV", None))
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client(broker):
    from queen import Queen

    q = Queen(broker.url)
    try:
        yield q
    finally:
        await q.close()


@pytest.fixture
def http(broker):
    with httpx.Client(base_url=broker.url, timeout=30) as c:
        yield c


@pytest.fixture
def qname(request) -> str:
    """A queue name no other test uses: the test's name plus a few random characters."""
    base = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[:40]
    return f"{base}-{uuid.uuid4().hex[:6]}"


def pytest_collection_modifyitems(items):
    # every coroutine test runs on anyio's asyncio runner
    for item in items:
        fn = getattr(item, "function", None)
        if fn is not None and inspect.iscoroutinefunction(fn):
            item.add_marker(pytest.mark.anyio)


def pytest_terminal_summary(terminalreporter):
    """A plain closing line: `pytest: N passed, N failed` (errors count as failures)."""
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    line = f"pytest: {passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    terminalreporter.write_line(line)
