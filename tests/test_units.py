"""edgebench.units: limits as users write them, refused when ambiguous."""

import re

import pytest

from edgebench.errors import ConfigError
from edgebench.units import format_memory, parse_cpus, parse_memory_mb


@pytest.mark.parametrize("text, mib", [
    ("512m", 512), ("512M", 512), ("512MB", 512), ("512mib", 512), ("64MiB", 64), (" 64 m ", 64),
    ("2g", 2048), ("2GB", 2048), ("1.5g", 1536), ("2GiB", 2048), ("512k", 0.5), ("1024KiB", 1),
])
def test_memory_with_unit_is_mib(text, mib):
    assert parse_memory_mb(text) == pytest.approx(mib)


@pytest.mark.parametrize("value", [64, "64"])
def test_memory_without_unit_is_refused_suggesting_64m(value):
    with pytest.raises(ConfigError) as e:
        parse_memory_mb(value)
    assert "'64m'" in str(e.value)
    assert "unit" in str(e.value)


@pytest.mark.parametrize("value", [64.0, " 64 ", 1.5])
def test_memory_without_unit_suggests_a_value_that_parses(value):
    with pytest.raises(ConfigError) as e:
        parse_memory_mb(value)
    suggestion = re.search(r"'([^']*m)'", str(e.value)).group(1)
    assert parse_memory_mb(suggestion) == pytest.approx(float(value))


@pytest.mark.parametrize("value", ["64x", "64 bytes", "64tb", "1e3m", "m", "many", True])
def test_memory_with_bad_unit_or_shape_is_refused(value):
    with pytest.raises(ConfigError) as e:
        parse_memory_mb(value)
    assert repr(value) in str(e.value)


@pytest.mark.parametrize("value", ["0m", "0g", "0.0m", "-64m", "-1g"])
def test_memory_must_be_positive(value):
    with pytest.raises(ConfigError):
        parse_memory_mb(value)


@pytest.mark.parametrize("value", [None, "", "  ", "none", "unlimited"])
def test_memory_none_or_empty_means_unlimited(value):
    assert parse_memory_mb(value) is None


@pytest.mark.parametrize("value, cpus", [("1", 1.0), (2, 2.0), ("0.5", 0.5), (1.5, 1.5), (" 4 ", 4.0)])
def test_cpus(value, cpus):
    assert parse_cpus(value) == cpus
    assert isinstance(parse_cpus(value), float)


@pytest.mark.parametrize("value", [None, "", "none", "unlimited"])
def test_cpus_none_means_unlimited(value):
    assert parse_cpus(value) is None


@pytest.mark.parametrize("value", ["two", "1 cpu", [1], 0, "0", -1, "-0.5"])
def test_cpus_refused(value):
    with pytest.raises(ConfigError) as e:
        parse_cpus(value)
    assert "cpus=" in str(e.value)


@pytest.mark.parametrize("value", ["nan", float("nan")])
def test_cpus_nan_is_refused(value):
    with pytest.raises(ConfigError):
        parse_cpus(value)


@pytest.mark.parametrize("mib, text", [(512, "512m"), (512.0, "512m"), (2048, "2048m"), (0.5, "512k"),
                                       (None, "unlimited")])
def test_format_memory(mib, text):
    assert format_memory(mib) == text


@pytest.mark.parametrize("mib", [4, 64, 1536, 0.5, 2.25])
def test_format_memory_round_trips(mib):
    assert parse_memory_mb(format_memory(mib)) == pytest.approx(mib)
