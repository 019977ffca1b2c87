"""server.jq"""
