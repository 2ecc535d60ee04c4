"""Part 5 (fleets, clusters, cost): the shared arithmetic, simulators and building blocks its chapters use
(billing, scheduling, quotas, telemetry, money). May import the framework, catalog/, components/, training/ and
serving/ (utils/__init__.py has the map)."""
