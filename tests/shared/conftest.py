"""Throwaway Redis and PostgreSQL servers for the shared-store suite (loopback, temp dirs).

``make test`` installs ``redis-server`` and ``postgresql`` from Debian when they are missing;
where it cannot, these fixtures skip with the reason. Each server is a real process on a free
loopback port with its data in a temporary directory, stopped (and its directory removed) after.
PostgreSQL refuses to run as root, so as root its commands run as the ``postgres`` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

redis = pytest.importorskip(
    "redis", reason="the shared extra is not installed (pip install fak[shared])"
)
psycopg = pytest.importorskip("psycopg", reason="the shared extra is not installed")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(check: object, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.05)
    msg = f"{what} did not come up in {timeout}s ({last!r})"
    raise RuntimeError(msg)


class RedisServer:
    """``redis-server`` on a free loopback port, no persistence, data dir in a temp dir."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (make test installs it from Debian)")
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="fak-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(self.dir), "--protected-mode", "no"]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        try:
            _wait(client.ping, "redis-server")
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def flush(self) -> None:
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)
        try:
            client.flushall()
        finally:
            client.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found and shutil.which("initdb"):
        return Path(str(shutil.which("initdb"))).parent
    if not found:
        pytest.skip("PostgreSQL is not installed (make test installs it from Debian)")
    return Path(found[-1]).parent


class PostgresServer:
    """A PostgreSQL cluster made by ``initdb`` in a temp dir, on a free loopback port."""

    def __init__(self) -> None:
        self.bin = _pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="fak-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.dsn = f"postgresql://fak@127.0.0.1:{self.port}/fak"
        self._as: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                pytest.skip("running as root without runuser: cannot start PostgreSQL")
            try:
                import pwd

                pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root and there is no postgres user to run PostgreSQL")
            shutil.chown(self.dir, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self.proc_started = False

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*self._as, *args], capture_output=True, check=check, timeout=120, cwd=self.dir
        )

    def init(self) -> None:
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "fak",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        )

    def start(self) -> None:
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} "
            "-c max_connections=200 -c shared_buffers=32MB"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(self.dir / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        self.proc_started = True
        _wait(self._ready, "postgres")

    def _ready(self) -> bool:
        with psycopg.connect(
            f"postgresql://fak@127.0.0.1:{self.port}/postgres", connect_timeout=2
        ) as conn:
            conn.execute("SELECT 1")
        return True

    def create_db(self) -> None:
        with psycopg.connect(
            f"postgresql://fak@127.0.0.1:{self.port}/postgres", autocommit=True
        ) as conn:
            conn.execute("DROP DATABASE IF EXISTS fak WITH (FORCE)")
            conn.execute("CREATE DATABASE fak")

    def stop(self, mode: str = "fast") -> None:
        if self.proc_started:
            self._run(
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                mode,
                "-w",
                "stop",
                check=False,
            )
            self.proc_started = False

    def kill(self) -> None:
        """Stop at once (``-m immediate``: no shutdown checkpoint, as a crash would)."""
        self.stop("immediate")

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.init()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test."""
    if redis_server.proc is None:
        redis_server.start()
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """The session's PostgreSQL with a fresh, empty ``fak`` database for this test."""
    if not postgres_server.proc_started:
        postgres_server.start()
    postgres_server.create_db()
    return postgres_server.dsn


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A Redis of this test's own, which it may kill and restart."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def private_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own (database ``fak``), which it may kill and restart."""
    server = PostgresServer()
    server.init()
    server.start()
    server.create_db()
    try:
        yield server
    finally:
        server.close()


class Gateway:
    """A ``fak serve`` process (maybe N workers) on a free loopback port."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [sys.executable, "-m", "fak.cli.main", "serve", "--mock", "--access-log", "off"]
        command += ["--addr", f"127.0.0.1:{self.port}", *args]
        with log.open("wb") as sink:
            self.proc = subprocess.Popen(
                command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        self._wait_up(int(args[args.index("--workers") + 1]) if "--workers" in args else 1)

    def _wait_up(self, workers: int) -> None:
        """Wait until ``workers`` distinct processes have answered /healthz. One answer is not
        enough for a fleet: the first worker up accepts every connection made before the others
        listen, and a load test's keep-alive clients would then never reach the rest."""
        seen: set[object] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                msg = f"fak serve exited {self.proc.returncode}: {self.log.read_text()[-2000:]}"
                raise RuntimeError(msg)
            try:
                answer = httpx.get(self.url + "/healthz", timeout=2)  # a new connection each
                if answer.status_code == 200:
                    seen.add(answer.json().get("worker"))
                    if len(seen) >= workers:
                        return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{workers - len(seen)} of {workers} fak serve workers not up in 60 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def fak_serve(tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    started: list[Gateway] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Gateway:
        gateway = Gateway(list(args), tmp_path / f"serve-{len(started)}.log", env)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
