"""`halfmq admin`: principals, tokens and check-back secrets in the broker's auth file.

The broker re-reads the file within a few seconds of a change, so a new or
revoked token takes effect without a restart. Tokens are printed once, when
made: the file keeps only their hashes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from halfmq.broker.security.auth_file import AuthFile, PolicyEntry, PrincipalEntry, derive_check_secret

from .credentials import ensure_credentials, ensure_etcd_passwords

DEFAULT_AUTH_FILE = Path("./data/auth/auth.json")


def _auth_file(args: argparse.Namespace) -> Path:
    return args.auth_file or Path(os.environ.get("HALFMQ_BROKER_AUTH_FILE") or DEFAULT_AUTH_FILE)


def _load(args: argparse.Namespace) -> tuple[Path, AuthFile]:
    path = _auth_file(args)
    if not path.exists():
        raise SystemExit(f"no auth file at {path}: run `halfmq admin init` or pass --auth-file")
    return path, AuthFile.load(path)


def _policy(args: argparse.Namespace) -> PolicyEntry:
    try:
        entry = PolicyEntry(actions=args.actions.split(","), resources=args.resources.split(","))
        entry.to_policy()
    except ValueError as exc:
        raise SystemExit(f"invalid policy: {exc}") from None
    return entry


def cmd_init(args: argparse.Namespace) -> int:
    creds, made = ensure_credentials(args.dir)
    print(f"{'made' if made else 'already there'}: {creds.auth_file} (broker: HALFMQ_BROKER_AUTH_FILE)")
    for name in ("admin", "order", "credit"):
        print(f"  {name} token: {creds.token_file(name)}")
    print(f"  order_producer_group check secret: {creds.order_check_secret_file}")
    if args.etcd:  # a broker set's etcd (compose's replicated overlay): its passwords here, its authentication on
        from halfmq.broker.cluster.etcd import EtcdUnavailable

        from .etcd_auth import secure_etcd

        ensure_etcd_passwords(args.dir)
        try:
            turned_on = secure_etcd(args.etcd, creds, args.etcd_prefix)
        except EtcdUnavailable as exc:
            raise SystemExit(f"etcd: {exc}") from None
        print(f"etcd {args.etcd}: authentication {'turned on' if turned_on else 'already on'}; nodes log in as halfmq "
              f"(HALFMQ_BROKER_ETCD_USER=halfmq, HALFMQ_BROKER_ETCD_PASSWORD_FILE={creds.etcd_password_file()})")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    _, auth = _load(args)
    for p in auth.principals:
        rules = "; ".join(f"{','.join(pol.actions)} on {','.join(pol.resources)}" for pol in p.policies) or "no policies"
        print(f"{p.name}\t{len(p.tokens)} token(s)\t{rules}")
    return 0


def cmd_users_add(args: argparse.Namespace) -> int:
    path, auth = _load(args)
    if auth.principal(args.name) is not None:
        raise SystemExit(f"principal {args.name!r} exists; use `halfmq admin users grant`")
    auth.principals.append(PrincipalEntry(name=args.name, policies=[_policy(args)] if args.actions else []))
    auth.save(path)
    print(f"added {args.name}")
    return 0


def _existing_principal(auth: AuthFile, name: str) -> PrincipalEntry:
    entry = auth.principal(name)
    if entry is None:
        raise SystemExit(f"no principal {name!r}")
    return entry


def cmd_users_grant(args: argparse.Namespace) -> int:
    path, auth = _load(args)
    entry = _existing_principal(auth, args.name)
    entry.policies.append(_policy(args))
    auth.save(path)
    return 0


def cmd_users_remove(args: argparse.Namespace) -> int:
    path, auth = _load(args)
    auth.principals = [p for p in auth.principals if p.name != args.name]
    auth.save(path)
    return 0


def cmd_tokens_create(args: argparse.Namespace) -> int:
    path, auth = _load(args)
    try:
        token = auth.add_token(args.name)
    except KeyError as exc:
        raise SystemExit(str(exc)) from None
    auth.save(path)
    print(token)  # the only time it is shown
    return 0


def cmd_tokens_revoke(args: argparse.Namespace) -> int:
    path, auth = _load(args)
    entry = _existing_principal(auth, args.name)
    before = len(entry.tokens)
    entry.tokens = [t for t in entry.tokens if not (args.all or t.id == args.id)]
    auth.save(path)
    print(f"revoked {before - len(entry.tokens)} token(s) of {args.name}", file=sys.stderr)
    return 0


def cmd_check_secret(args: argparse.Namespace) -> int:
    _, auth = _load(args)
    print(derive_check_secret(auth.check_secret_key, args.group))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    admin = sub.add_parser("admin", help="operate a broker (transactions, topics, groups, DLQ, ...) and its auth file")
    verbs = admin.add_subparsers(dest="admin_command", required=True)

    def with_file(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--auth-file", type=Path, help=f"default: $HALFMQ_BROKER_AUTH_FILE or {DEFAULT_AUTH_FILE}")
        return p

    init = verbs.add_parser("init", help="make an auth file with admin, order and credit principals and their tokens")
    init.add_argument("dir", type=Path, nargs="?", default=DEFAULT_AUTH_FILE.parent)
    init.add_argument("--etcd", metavar="URL", help="also turn on authentication in a broker set's etcd (http://HOST:2379): "
                                                    "users root and halfmq, passwords kept in DIR")
    init.add_argument("--etcd-prefix", default="/halfmq/", help="the set's key prefix the halfmq user may read and write (default /halfmq/)")
    init.set_defaults(func=cmd_init)

    users = verbs.add_parser("users", help="principals and their policies").add_subparsers(dest="users_command", required=True)
    with_file(users.add_parser("list")).set_defaults(func=cmd_users_list)
    for verb, func in (("add", cmd_users_add), ("grant", cmd_users_grant)):
        p = with_file(users.add_parser(verb))
        p.add_argument("name")
        p.add_argument("--actions", required=verb == "grant", help="publish,subscribe,admin")
        p.add_argument("--resources", required=verb == "grant", help="e.g. topic:ORDER_*,group:credit_group (or *)")
        p.set_defaults(func=func)
    remove = with_file(users.add_parser("remove"))
    remove.add_argument("name")
    remove.set_defaults(func=cmd_users_remove)

    tokens = verbs.add_parser("tokens", help="bearer tokens").add_subparsers(dest="tokens_command", required=True)
    create = with_file(tokens.add_parser("create", help="print a new token for a principal (shown once)"))
    create.add_argument("name")
    create.set_defaults(func=cmd_tokens_create)
    revoke = with_file(tokens.add_parser("revoke"))
    revoke.add_argument("name")
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--id")
    which.add_argument("--all", action="store_true")
    revoke.set_defaults(func=cmd_tokens_revoke)

    secret = with_file(verbs.add_parser("check-secret", help="print a producer group's check-back secret (for its check app)"))
    secret.add_argument("group")
    secret.set_defaults(func=cmd_check_secret)

    from .admin import commands as broker_verbs  # transactions, topics, groups, dlq, ... against a running broker

    broker_verbs.add_verbs(verbs)
