"""server.cli"""
