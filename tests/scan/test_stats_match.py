"""File-statistics pruning with memoized decoding: answers follow the stats object and the fields asked."""

from __future__ import annotations

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import DataField, parse_sql_type
from lsmlake.expr import Compare
from lsmlake.metadata.stats import SimpleStats
from lsmlake.scan.stats_match import stats_might_match

INT = parse_sql_type("INT")
A = DataField(0, "a", INT)
B = DataField(1, "b", INT)


def _stats(low: tuple[int, int], high: tuple[int, int]) -> SimpleStats:
    return SimpleStats(serialize_row(list(low), [INT, INT]), serialize_row(list(high), [INT, INT]), (0, 0))


def test_each_stats_object_answers_for_its_own_range() -> None:
    wanted = Compare("a", "=", 50)
    for _ in range(3):  # repeated planning hits the memo and must answer the same
        assert stats_might_match(wanted, _stats((0, 0), (100, 1)), [A, B], 10)
        assert not stats_might_match(wanted, _stats((60, 0), (100, 1)), [A, B], 10)


def test_one_stats_object_decoded_for_other_fields_is_decoded_again() -> None:
    stats = _stats((0, 60), (10, 100))
    assert not stats_might_match(Compare("a", "=", 50), stats, [A, B], 10)
    # the same bytes read with the columns swapped (another schema): column "a" is now 60..100
    swapped = [DataField(0, "b", INT), DataField(1, "a", INT)]
    assert stats_might_match(Compare("a", "=", 70), stats, swapped, 10)
    assert not stats_might_match(Compare("a", "=", 5), stats, swapped, 10)


def test_stats_that_cannot_be_compared_never_prune() -> None:
    # an unbound literal of another type: the comparison fails, so the file is kept
    assert stats_might_match(Compare("a", "=", "text"), _stats((0, 0), (10, 1)), [A, B], 10)
