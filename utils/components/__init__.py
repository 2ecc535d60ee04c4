"""Part 6's building blocks: real mechanisms with their own contracts (a circuit breaker, a token bucket, an
idempotent resource API, a work queue, a preemptive queue, a versioned store, ...). They import nothing else from
utils, so each stands alone (utils/__init__.py has the map)."""
