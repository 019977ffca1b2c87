"""Suite-wide pytest configuration: only loads shared plugins."""

pytest_plugins = ["tests.cluster.fixtures"]
