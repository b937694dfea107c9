"""SGLang version strings: every per-release decision starts here, so the order must be PEP 440's."""

import pytest

from sgtui.core.errors import UserError
from sgtui.core.sglang.versions import parse_version


def test_releases_sort_as_pep440_with_dev_builds_before_their_release() -> None:
    ordered = [
        "0.0.0.dev0",
        "0.4.3",
        "0.4.3.post2",
        "0.5.10",
        "0.5.10.post1",
        "0.5.11rc0",
        "0.5.11rc2",
        "0.5.11",
        "0.5.23",
        "0.5.24.dev3+gabc123",
        "0.5.24rc0",
        "0.5.24",
    ]
    assert sorted(reversed(ordered), key=parse_version) == ordered


def test_a_leading_v_and_whitespace_name_the_same_release() -> None:
    assert parse_version("v0.5.10") == parse_version(" 0.5.10 ")
    assert str(parse_version("v0.5.10.post1")) == "0.5.10.post1"


def test_base_drops_post_rc_and_dev_parts() -> None:
    assert parse_version("0.4.3.post2").base == "0.4.3"
    assert parse_version("0.5.11rc2").base == "0.5.11"
    assert parse_version("0.5.24.dev3+gabc").base == "0.5.24"
    assert parse_version("0.5").release == (0, 5, 0)


def test_build_kinds() -> None:
    assert parse_version("0.5.24.dev3+gabc").is_dev
    assert parse_version("0.0.0.dev0").is_untagged
    assert parse_version("0.5.11rc1").is_prerelease
    release = parse_version("0.5.11")
    assert not (release.is_dev or release.is_untagged or release.is_prerelease)


@pytest.mark.parametrize("text", ["", "latest", "0.5.x", "5..1", "0.5.11 extra"])
def test_a_non_version_is_one_user_error_naming_it(text: str) -> None:
    with pytest.raises(UserError, match="is not a version number"):
        parse_version(text)
