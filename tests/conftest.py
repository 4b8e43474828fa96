import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None, max_examples=60)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The packages are imported here, before any test module: a test that puts the repository
# on sys.path (to import experiments/) then still uses the copy imported first. With
# REQUIRE_INSTALLED_PACKAGE set (CI's wheel step) that copy must be the installed one.
import replica  # noqa: E402
import validation  # noqa: E402

_REPO = Path(__file__).resolve().parents[1]


def _imported_from(module) -> Path:
    return Path(module.__file__).resolve().parent


if os.environ.get("REQUIRE_INSTALLED_PACKAGE"):
    for _module in (replica, validation):
        if _imported_from(_module).is_relative_to(_REPO):
            raise pytest.UsageError(f"REQUIRE_INSTALLED_PACKAGE is set but {_module.__name__} was imported from "
                                    f"the source tree ({_imported_from(_module)}), not from an installed wheel")


def pytest_report_header(config):
    return [f"{m.__name__} imported from {_imported_from(m)}" for m in (replica, validation)]
