"""A FileIO with its request counter can be pickled (Ray ships it to workers); the copy counts on its own."""

from __future__ import annotations

import pickle

import pytest

from lsmlake.core.fileio import RequestCounter


def test_request_counter_survives_pickling() -> None:
    counter = RequestCounter()
    counter.add("GET", 3)
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(counter))
        assert copy.counts() == {"GET": 3}
        copy.add("PUT")
        assert copy.counts() == {"GET": 3, "PUT": 1}
    assert counter.counts() == {"GET": 3}
