"""What each workflow offers its clients: its type name, signals, queries and payloads.

A workflow module and every client that starts, signals or queries it import the same
contract module, so the core starts workflows without importing workflow code.
"""
