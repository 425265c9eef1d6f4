"""S3 settings from the places other than the environment where AWS tools keep them.

``obstore`` reads the ``AWS_*`` environment variables by itself. Two more places are standard and
are read here, each only for settings the environment does not already give (the environment wins,
as with every AWS tool):

* the **shared files** ``~/.aws/credentials`` and ``~/.aws/config`` (or ``AWS_SHARED_CREDENTIALS_FILE``
  / ``AWS_CONFIG_FILE``), profile ``AWS_PROFILE`` or ``default``: static keys, session token,
  region and ``endpoint_url``;
* a Spark session's **Hadoop S3A settings** (``fs.s3a.access.key``, ``fs.s3a.endpoint``, ...),
  which the Spark layer hands over as plain key/value pairs (:func:`from_hadoop`).

Credentials are taken as a whole from one place: a key id from one source is never paired with a
secret from another. Values come back under obstore's S3 configuration keys.
"""
from __future__ import annotations

import configparser
import os
from collections.abc import Mapping

#: obstore key -> the environment variables that set it (any of them present: the key is set)
_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "access_key_id": ("AWS_ACCESS_KEY_ID",),
    "secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "session_token": ("AWS_SESSION_TOKEN",),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    "virtual_hosted_style_request": ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
}
_CREDENTIALS = ("access_key_id", "secret_access_key", "session_token")

#: shared-file key -> obstore key
_FILE_KEYS = {
    "aws_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
    "region": "region",
    "endpoint_url": "endpoint",
}

#: Hadoop S3A key -> obstore key
_HADOOP_KEYS = {
    "fs.s3a.access.key": "access_key_id",
    "fs.s3a.secret.key": "secret_access_key",
    "fs.s3a.session.token": "session_token",
    "fs.s3a.endpoint": "endpoint",
    "fs.s3a.endpoint.region": "region",
}


def shared_file_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3 settings of the active profile in the shared AWS files."""
    env = os.environ if environ is None else environ
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    home = os.path.expanduser("~")
    credentials_file = env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials")
    config_file = env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    found: dict[str, str] = {}
    # the config file names profiles "[profile x]" (but "[default]"); the credentials file "[x]"
    config_section = profile if profile == "default" else f"profile {profile}"
    for path, section in ((config_file, config_section), (credentials_file, profile)):
        values = _section(path, section)
        for key, target in _FILE_KEYS.items():
            if values.get(key):
                found[target] = values[key]  # the credentials file, read second, wins
    if "access_key_id" not in found:
        for key in _CREDENTIALS:
            found.pop(key, None)
    return found


def from_hadoop(conf: Mapping[str, str]) -> dict[str, str]:
    """obstore settings from Hadoop S3A settings (``fs.s3a.*`` keys, ``spark.hadoop.`` prefix
    already removed)."""
    found = {target: str(conf[key]).strip() for key, target in _HADOOP_KEYS.items()
             if str(conf.get(key) or "").strip()}
    endpoint = found.get("endpoint")
    if endpoint and "://" not in endpoint:
        secure = str(conf.get("fs.s3a.connection.ssl.enabled", "true")).strip().lower() != "false"
        found["endpoint"] = f"{'https' if secure else 'http'}://{endpoint}"
    path_style = str(conf.get("fs.s3a.path.style.access") or "").strip().lower()
    if path_style in ("true", "false"):
        found["virtual_hosted_style_request"] = "false" if path_style == "true" else "true"
    if "access_key_id" not in found:
        for key in _CREDENTIALS:
            found.pop(key, None)
    return found


def environment_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3 settings the ``AWS_*`` environment variables give, under obstore's keys (what
    obstore would read from this process's environment by itself)."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for key, variables in _ENV_KEYS.items():
        value = next((env[v] for v in variables if env.get(v)), None)
        if value:
            found[key] = value
    if "access_key_id" not in found:
        for key in _CREDENTIALS:
            found.pop(key, None)
    return found


def below_environment(settings: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``settings`` without what the environment sets (credentials as a whole)."""
    env = os.environ if environ is None else environ
    out = {k: v for k, v in settings.items()
           if not any(env.get(var) for var in _ENV_KEYS.get(k, ()))}
    if any(env.get(var) for key in _CREDENTIALS for var in _ENV_KEYS[key]):
        for key in _CREDENTIALS:
            out.pop(key, None)
    return out


def _section(path: str, section: str) -> dict[str, str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return {}  # an unreadable file is as good as none: the environment may still suffice
    if not parser.has_section(section):
        return {}
    return {k.lower(): v.strip() for k, v in parser.items(section)}
