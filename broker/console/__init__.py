"""The operators' web console at /console: server-rendered pages, htmx (vendored) for polling and actions."""
