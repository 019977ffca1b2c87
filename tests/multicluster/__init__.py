"""Several clusters served together (issue 15 item 5)."""
