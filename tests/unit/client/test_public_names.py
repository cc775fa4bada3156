"""halfmq.client's public names: the typed imports mypy reads and the table the lazy ``__getattr__`` serves agree,
and ``halfmq`` serves every one of them."""

import ast
import inspect

import halfmq
import halfmq.client
from tests.support.source_trees import parse


def _typed_imports() -> dict[str, str]:
    """name -> module of each ``from module import name as name`` under ``if TYPE_CHECKING:``."""
    tree = parse(inspect.getsource(halfmq.client))
    guard = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.asname or alias.name: str(imp.module) for imp in guard.body if isinstance(imp, ast.ImportFrom) for alias in imp.names}


def test_mypy_sees_exactly_the_names_the_package_serves_from_the_same_modules() -> None:
    assert _typed_imports() == halfmq.client._HOMES


def test_every_typed_import_re_exports_its_name_under_mypy_strict() -> None:
    tree = parse(inspect.getsource(halfmq.client))
    aliases = [alias for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and str(node.module).startswith("halfmq.")
               for alias in node.names]
    assert all(alias.asname == alias.name for alias in aliases)


def test_halfmq_serves_every_name_of_halfmq_client_and_its_version() -> None:
    assert sorted(halfmq.__all__) == sorted([*halfmq.client.__all__, "__version__"])
    assert all(getattr(halfmq, name) is getattr(halfmq.client, name) for name in halfmq.client.__all__)


def test_the_errors_users_catch_are_importable_from_halfmq() -> None:
    from halfmq import AccessDenied, BrokerError, InvalidTopicName, NotLeader, TopicNotFound, Unauthenticated

    assert all(issubclass(cls, BrokerError) for cls in (AccessDenied, InvalidTopicName, NotLeader, TopicNotFound, Unauthenticated))
