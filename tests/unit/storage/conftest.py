"""Setup of the storage unit tests: the shared contract (storage_contract.py, next to this file)
and the log-layer checks it runs use the transaction log tests' plain helpers (delta_helpers.py
in tests/unit/delta), so both folders are importable here."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "delta"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
