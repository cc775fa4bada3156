"""Who may do what: principals, hashed tokens, policies and the decision between them.

No HTTP here (import-linter contract): the API's ``guard`` module is the one
place a request's bearer token becomes a principal and a route asks ``decide``.
"""
