"""Fetch Hadoop's S3A connector (hadoop-aws and the AWS SDK bundle it calls) for the tests.

The tests that read tables through a real Hadoop connector (``bridgeFiles=hadoop``) need the
jars a cluster puts on its class path for ``s3a://``. Maven is out of reach here; PyPI is not,
and the ``sagemaker_pyspark`` source distribution carries the Apache builds of
``hadoop-aws-3.3.1.jar`` and ``aws-java-sdk-bundle-1.11.901.jar``. This script downloads that
archive with pip (so a pip mirror or proxy configured for the machine applies), checks its
hash and the hashes of the two jars, and keeps only the jars in ``--dest``. Nothing of the
package is installed or imported.

Usage: ``python jvm/fetch_hadoop_aws.py --dest .venv/hadoop-aws`` (``make hadoop-aws``). Exits 0
when the jars are already there.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DISTRIBUTION = "sagemaker_pyspark==1.4.5"
ARCHIVE_SHA256 = "05ca2d5081d7138ce29a8fb0a9cba077f28c825288ed07aed46a82e63c0bf1fb"
#: the jars kept, with their SHA-256 (the Apache releases, as the archive holds them)
JARS = {
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def present(dest: Path) -> bool:
    """Whether every jar is in ``dest`` with its size (hashes are checked when fetched)."""
    return all((dest / name).is_file() and (dest / name).stat().st_size > 0 for name in JARS)


def fetch(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hadoop-aws-") as work:
        requirement = Path(work) / "requirement.txt"
        requirement.write_text(f"{DISTRIBUTION} --hash=sha256:{ARCHIVE_SHA256}\n")
        # the release is a source archive only: pip builds its metadata (in an isolated build
        # environment with setuptools) but installs nothing
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--require-hashes", "-r", str(requirement), "-d", work],
                       check=True)
        archives = [p for p in Path(work).iterdir() if p.name.endswith(".tar.gz")]
        if len(archives) != 1:
            raise SystemExit(f"expected one source archive of {DISTRIBUTION}, found {archives}")
        with tarfile.open(archives[0]) as archive:
            members = {Path(m.name).name: m for m in archive.getmembers()
                       if m.isfile() and Path(m.name).name in JARS}
            missing = sorted(set(JARS) - set(members))
            if missing:
                raise SystemExit(f"{archives[0].name} holds no {', '.join(missing)}")
            for name, member in members.items():
                source = archive.extractfile(member)
                assert source is not None
                partial = dest / f".{name}.partial"
                with open(partial, "wb") as target:
                    while chunk := source.read(1 << 20):
                        target.write(chunk)
                if sha256(partial) != JARS[name]:
                    partial.unlink()
                    raise SystemExit(f"{name} in {archives[0].name} does not have the expected SHA-256")
                os.replace(partial, dest / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", required=True, type=Path, help="folder for the jars")
    args = parser.parse_args(argv)
    if not present(args.dest):
        fetch(args.dest)
        print(f"{Path(__file__).name}: {', '.join(JARS)} in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
