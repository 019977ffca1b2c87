"""server.definitions"""
