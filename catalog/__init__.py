"""The catalog of Karta definitions, one YAML file per workload type (README.md here).

This folder is installed as the data package ``workload_map.catalog`` (pyproject.toml
``package-dir``); it holds no code.
"""
