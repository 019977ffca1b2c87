"""``python -m workload_map`` runs the ``wmap`` command line."""

from workload_map.cli.main import run

run()
