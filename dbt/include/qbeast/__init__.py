"""dbt macros, project file and profile template of the qbeast adapter (located by PACKAGE_PATH)."""
import os

PACKAGE_PATH = os.path.dirname(__file__)
