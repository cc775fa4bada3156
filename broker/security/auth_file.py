"""The auth file the broker reads: principals, their hashed tokens and policies, the check-back key.

Tokens are 256-bit random strings, so the file keeps only their SHA-256: a
slow salted hash (argon2, scrypt) protects guessable passwords, and nothing
guesses 2^256; a fast hash keeps the lookup on every hot request at about a
microsecond. The check-back key must stay readable (the broker signs with
secrets derived from it), so the file is written owner-only (0600).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

import orjson
from pydantic import BaseModel, Field, model_validator

from .policy import Policy, Principal

TOKEN_PREFIX = "hmq_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def derive_check_secret(key_hex: str, producer_group: str) -> str:
    """The producer group's check-back secret: one key in the file serves every group, none shares another's."""
    return hmac.new(bytes.fromhex(key_hex), b"halfmq-check-secret:" + producer_group.encode(), hashlib.sha256).hexdigest()


def derive_rocketmq_secret(key_hex: str, principal: str) -> str:
    """The principal's RocketMQ 5 secret key (its access key is its name): RocketMQ clients sign with an HMAC the
    broker must recompute, so the secret is derived from the file's key rather than stored as a hash like tokens."""
    return hmac.new(bytes.fromhex(key_hex), b"halfmq-rocketmq-secret:" + principal.encode(), hashlib.sha256).hexdigest()


class TokenEntry(BaseModel):
    id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class PolicyEntry(BaseModel):
    actions: list[str]
    resources: list[str]

    @model_validator(mode="after")
    def _parses(self) -> PolicyEntry:
        self.to_policy()  # a bad action or pattern fails the whole file, not silently one principal
        return self

    def to_policy(self) -> Policy:
        return Policy.parse(self.actions, self.resources)


class PrincipalEntry(BaseModel):
    name: str = Field(min_length=1, max_length=127)
    tokens: list[TokenEntry] = []
    policies: list[PolicyEntry] = []

    def to_principal(self) -> Principal:
        return Principal(self.name, tuple(p.to_policy() for p in self.policies))


class AuthFile(BaseModel):
    version: int = 1
    check_secret_key: str = Field(default_factory=lambda: secrets.token_hex(32), pattern=r"^[0-9a-f]{64}$")
    principals: list[PrincipalEntry] = []

    @classmethod
    def load(cls, path: Path) -> AuthFile:
        return cls.model_validate_json(path.read_bytes())

    def save(self, path: Path) -> None:
        """Atomically, owner-only from the first byte."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, orjson.dumps(self.model_dump(), option=orjson.OPT_INDENT_2))

    def principal(self, name: str) -> PrincipalEntry | None:
        return next((p for p in self.principals if p.name == name), None)

    def add_token(self, name: str) -> str:
        """A new token for principal ``name``; only its hash is kept, so the caller must hand it out now."""
        entry = self.principal(name)
        if entry is None:
            raise KeyError(f"no principal {name!r}")
        token = new_token()
        entry.tokens.append(TokenEntry(id=secrets.token_hex(4), sha256=token_hash(token)))
        return token


def write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class AuthFileError(Exception):
    """The auth file is missing or not valid: the broker must not start open instead."""


class Authenticator:
    """Token -> principal, and group -> check-back secret, from one loaded auth file."""

    def __init__(self, auth: AuthFile) -> None:
        self._by_hash = {t.sha256: p.to_principal() for p in auth.principals for t in p.tokens}
        self._key = auth.check_secret_key
        self._secrets: dict[str, bytes] = {}
        self._by_name = {p.name: p.to_principal() for p in auth.principals}

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        try:
            return cls(AuthFile.load(path))
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise AuthFileError(f"auth file {path}: {str(exc).splitlines()[0]}") from exc

    def principal_for(self, token: str) -> Principal | None:
        return self._by_hash.get(token_hash(token))

    def rocketmq_principal(self, access_key: str, signed: str, signature: str) -> Principal | None:
        """The principal whose RocketMQ secret signed ``signed`` (HMAC-SHA1, hex) as ``signature``; None otherwise."""
        principal = self._by_name.get(access_key)
        if principal is None:
            return None
        secret = derive_rocketmq_secret(self._key, access_key).encode()
        expected = hmac.new(secret, signed.encode(), hashlib.sha1).hexdigest()
        return principal if hmac.compare_digest(expected, signature.lower()) else None

    def check_secret(self, producer_group: str) -> bytes:
        secret = self._secrets.get(producer_group)
        if secret is None:
            secret = self._secrets[producer_group] = derive_check_secret(self._key, producer_group).encode()
        return secret
