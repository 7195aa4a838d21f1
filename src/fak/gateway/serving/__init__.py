"""Serving the gateway (tier T3): ``fak serve`` assembled from one frozen ``ServeConfig``.

``config`` holds the value the CLI fills from its flags and settings; ``assembly`` builds the
policy, each worker's kernel, planner and app from it and serves; ``workers`` supervises N
forked workers on one socket; ``follower`` keeps a fleet's workers on one policy. The CLI keeps
the flags, the planner choice (only it may import the engine) and the exit codes.
"""

from fak.gateway.serving.assembly import StartError, StartStage, serve
from fak.gateway.serving.config import AccessLogSink, ServeConfig
from fak.gateway.serving.follower import EpochFeed, follow_policy, trust_feed
from fak.gateway.serving.workers import Console, run_workers

__all__ = [
    "AccessLogSink",
    "Console",
    "EpochFeed",
    "ServeConfig",
    "StartError",
    "StartStage",
    "follow_policy",
    "run_workers",
    "serve",
    "trust_feed",
]
