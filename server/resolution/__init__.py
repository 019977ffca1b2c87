"""server.resolution"""
