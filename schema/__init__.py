"""GraphQL types (strawberry), a thin layer over server.resolution views."""
