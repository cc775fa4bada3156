"""Python source parsed into an AST for the tests that read the project's own code (layers, waits, public names).

``ast.parse`` runs with the garbage collector paused. On CPython 3.11 the AST constructor keeps its recursion depth
in state shared by every parse in the process: a collection during a parse can run a finalizer (an asyncio future a
Kafka client left with an exception nobody retrieved logs "Future exception was never retrieved" with its traceback),
3.11's traceback formatting parses the failing line with ``ast.parse`` for its carets, and the outer parse then fails
with "SystemError: AST constructor recursion depth mismatch" (seen once in the suite: test_lint's waits check after
the aiokafka copier ran in the same process; python/cpython gh-106905 is the same counter).
"""

from __future__ import annotations

import ast
import gc


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)`` with no collection (and so no finalizer) running inside it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if enabled:
            gc.enable()
