"""GraphQL types (strawberry), a thin layer over workload_map.resolution views."""

if __name__ != "workload_map_schema":  # the folder schema/ is the package workload_map_schema (README "Layout")
    raise ImportError(f"import workload_map_schema, not {__name__}")

