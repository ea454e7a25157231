from tests.e2e.procs import cluster, redis_available

__all__ = ["cluster", "redis_available"]
