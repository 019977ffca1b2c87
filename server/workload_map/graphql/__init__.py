"""GraphQL types (strawberry), a thin layer over workload_map.resolution views."""
