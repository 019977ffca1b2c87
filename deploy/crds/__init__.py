"""The Karta CustomResourceDefinition (``kartas.run.ai.yaml``).

This folder is installed as the data package ``workload_map.crds`` (pyproject.toml
``package-dir``); it holds no code.
"""
