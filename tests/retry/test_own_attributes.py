"""What the guard reads of the person's data it reads from array libraries' own classes: a
property or ``__getattr__`` of the person's never runs on the guard's account."""

from __future__ import annotations

import numpy as np

from ipy_gpuguard.retry.measure import samples_of
from ipy_gpuguard.retry.own_attributes import library_attribute, qualified_name


class Recorded:
    """Data of the person's that notes every attribute asked of it."""

    asked: list[str]

    def __init__(self) -> None:
        self.asked = []

    @property
    def shape(self):
        self.asked.append("shape")
        raise NotImplementedError("a stream has no shape")

    def __getattr__(self, name):
        self.asked.append(name)
        raise AttributeError(name)


class PersonsArray(np.ndarray):
    """An array of the person's whose ``shape`` is theirs."""

    @property
    def shape(self):
        raise RuntimeError("the person's own")


def test_an_array_librarys_shape_is_read_through_its_own_class():
    assert library_attribute(np.zeros((3, 2)), "shape") == (3, 2)
    assert library_attribute(np.zeros(3).dtype, "kind") == "f"  # a class written in C
    assert library_attribute(np.zeros(3).view(np.recarray), "shape") == (3,)
    assert qualified_name(np.ndarray) == "numpy.ndarray"


def test_the_persons_property_or_getattr_never_answers_for_the_guard():
    data = Recorded()
    assert library_attribute(data, "shape") is None
    assert library_attribute(data, "dtype") is None
    assert samples_of(data) is None
    assert samples_of({"a": np.zeros(4), "b": data}) is None
    assert data.asked == []
    assert library_attribute(np.zeros(3).view(PersonsArray), "shape") is None
