from __future__ import annotations

import psycopg
import redis


def test_the_fixtures_start_real_servers(redis_url: str, postgres_dsn: str) -> None:
    client = redis.Redis.from_url(redis_url)
    assert client.ping()
    client.close()
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
