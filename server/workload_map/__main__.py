"""``python -m workload_map`` runs the ``wmap`` command line."""

from workload_map.cli.entry import run

run()
