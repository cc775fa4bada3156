"""The write cork: a server that can send a response's head and body as one write offers it to the app.

The server side (uvicorn_head_limits' protocol) puts its transport in ``scope["extensions"][CORK]``;
the app's front (broker/api/front.py) finds it there. One name both sides import, so the
feature points one way: api -> serving.
"""

CORK = "halfmq.cork"  # scope["extensions"] key of a server's write cork: head and body go out as one write
