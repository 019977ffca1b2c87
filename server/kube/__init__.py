"""server.kube"""
