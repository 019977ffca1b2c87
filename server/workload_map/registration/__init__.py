"""Registration: the definition write path, shared by GraphQL, REST and the CLI.

``registrar.Registrar`` checks and stores a Karta document (``guards``: size, expansion and
readability limits), ``following.DefinitionIntake`` follows stored definitions into the
registry, ``stores`` holds them (a directory, or the cluster's Karta objects through
``workload_map.kube.kartas``) and ``workload_types`` translates the Run:ai workload-type
REST body. May import ``workload_map.materialization`` and lower layers; never the read
service.
"""
