"""What a failed object-store request tells its user: the store's code first, then a fix.

The client library's message for a refused request is an HTTP status followed by the XML or JSON
body the store returned, many lines long, with the one word that says what went wrong
(``SignatureDoesNotMatch``, ``NoSuchBucket``, ``SlowDown``) somewhere inside. This module reads
that word out of the text, with the status and how often the request was retried, and turns it
into one line: the code, what was attempted where, and what to change. Pure text handling:
nothing here makes a request, so every rule is unit-tested on the stores' real answers.

Retries: the client retries server errors (5xx, S3's ``503 SlowDown`` throttling), dropped
connections and timeouts with exponential back-off and jitter (0.1 s doubling up to 15 s), at
most :data:`DEFAULT_MAX_RETRIES` times and for :data:`DEFAULT_RETRY_SECONDS` in all; the
storage options ``max_retries`` / ``retry_timeout`` (seconds) or the environment variables
:data:`MAX_RETRIES_ENV` / :data:`RETRY_SECONDS_ENV` change both limits. Refusals (4xx) are
final at once: a wrong key does not become right by asking again.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from qbeast.errors import InvalidOptionError

DEFAULT_MAX_RETRIES = 10
DEFAULT_RETRY_SECONDS = 180.0
MAX_RETRIES_ENV = "QBEAST_STORE_MAX_RETRIES"
RETRY_SECONDS_ENV = "QBEAST_STORE_RETRY_TIMEOUT"
#: the storage options that set the two limits (taken out before the store sees its options)
RETRY_OPTIONS = ("max_retries", "retry_timeout")

_NOT_ALLOWED = ("these credentials may not do this: grant them read, write, list and delete on "
                "the table's prefix")

#: what to do about each code a store answers with (S3's names; GCS's XML API and Azure share
#: several of them)
_HINTS = {
    "SignatureDoesNotMatch": "the secret key does not belong to the access key id: check "
                             "AWS_SECRET_ACCESS_KEY (or fs.s3a.secret.key)",
    "InvalidAccessKeyId": "the store does not know this access key id: check AWS_ACCESS_KEY_ID "
                          "(or fs.s3a.access.key) and that AWS_ENDPOINT_URL is the store it "
                          "belongs to",
    "ExpiredToken": "the session token has expired: renew the credentials",
    "InvalidToken": "the session token is not valid: renew AWS_SESSION_TOKEN",
    "AccessDenied": _NOT_ALLOWED,
    "AuthorizationFailure": _NOT_ALLOWED,
    "NoSuchBucket": "the bucket does not exist: create it, or fix the bucket in the location "
                    "(and the endpoint or region, if it lives elsewhere)",
    "ContainerNotFound": "the container does not exist: create it, or fix the location",
    "NoSuchKey": "no object has this key: it was deleted (a data file removed outside its "
                 "table's log: restore it, or read an older version) or the location is wrong",
    "SlowDown": "the store throttled the requests: run fewer writers at once, or raise "
                f"{MAX_RETRIES_ENV} / {RETRY_SECONDS_ENV} to wait longer",
    "ServiceUnavailable": "the store is not serving requests now: try again later",
    "ConnectionRefused": "nothing listens at the store's endpoint: check AWS_ENDPOINT_URL (or "
                         "fs.s3a.endpoint) and that the store is running",
    "Unreachable": "the store's endpoint did not answer: check the endpoint, the network and "
                   "the proxy settings",
}

_CODE_XML = re.compile(r"<Code>\s*([A-Za-z][A-Za-z0-9.]*)\s*</Code>")
_CODE_JSON = re.compile(r'"(?:reason|code)"\s*:\s*"([A-Za-z][A-Za-z0-9.]*)"')
_MESSAGE_XML = re.compile(r"<Message>\s*([^<]*?)\s*</Message>")
_STATUS = re.compile(r"(?:status code: |status: )(\d{3})")
_RETRIES = re.compile(r"retries: (\d+)")
_ELAPSED = re.compile(r"elapsed: ([\d.]+)(ms|s|µs)")
_REFUSED = re.compile(r"connection refused|connect error|error trying to connect", re.IGNORECASE)
_UNREACHABLE = re.compile(r"error sending request|timed out|dns error|failed to lookup",
                          re.IGNORECASE)


@dataclass(frozen=True)
class StoreFailure:
    """One failed request, read out of the client's message."""

    code: str | None
    status: int | None
    store_message: str | None
    retries: int | None
    elapsed_seconds: float | None

    @property
    def hint(self) -> str | None:
        return _HINTS.get(self.code or "")

    def line(self, what: str, location: str) -> str:
        """The one line a user reads: ``CODE (status) reading s3://b/k: ...; <fix>``."""
        head = self.code or "StoreError"
        if self.status is not None:
            head += f" ({self.status})"
        text = f"{head} {what} {location}"
        if self.store_message:
            text += f": {self.store_message.rstrip('.')}"
        if self.retries:
            took = f" in {self.elapsed_seconds:.1f}s" if self.elapsed_seconds is not None else ""
            text += f" (after {self.retries} retries{took})"
        if self.hint:
            text += f"; {self.hint}"
        return text


def read_failure(text: str) -> StoreFailure:
    """The store's code, HTTP status, own message and the retries out of a client message."""
    code_match = _CODE_XML.search(text) or _CODE_JSON.search(text)
    code = code_match.group(1) if code_match else None
    status_match = _STATUS.search(text)
    status = int(status_match.group(1)) if status_match else None
    if code is None:
        if _REFUSED.search(text):
            code = "ConnectionRefused"
        elif status == 404:
            code = "NotFound"
        elif status == 503:
            code = "ServiceUnavailable"
        elif status is None and _UNREACHABLE.search(text):
            code = "Unreachable"
    message_match = _MESSAGE_XML.search(text)
    retries_match = _RETRIES.search(text)
    elapsed = None
    elapsed_match = _ELAPSED.search(text)
    if elapsed_match:
        scale = {"ms": 1e-3, "s": 1.0, "µs": 1e-6}[elapsed_match.group(2)]
        elapsed = float(elapsed_match.group(1)) * scale
    return StoreFailure(code, status, message_match.group(1) if message_match else None,
                        int(retries_match.group(1)) if retries_match else None, elapsed)


def retry_limits(options: Mapping[str, object]) -> tuple[int, float]:
    """(max retries, seconds) for a store: its options first, then the environment, then the
    defaults. A bad value is refused naming the option and the allowed values."""
    def pick(option: str, env: str, default: float, kind: type) -> float:
        raw = options.get(option, os.environ.get(env))
        if raw is None or raw == "":
            return default
        try:
            value = kind(str(raw))
        except ValueError:
            value = -1
        if value < 0:
            raise InvalidOptionError(
                f"{option} (or {env}) = {raw!r} is not allowed; allowed values: "
                f"{'an integer' if kind is int else 'a number of seconds'} >= 0",
                option=option, value=raw)
        return value

    retries = int(pick("max_retries", MAX_RETRIES_ENV, DEFAULT_MAX_RETRIES, int))
    return retries, float(pick("retry_timeout", RETRY_SECONDS_ENV, DEFAULT_RETRY_SECONDS, float))
