"""What the guard reads of the person's data it reads from array libraries' own classes: a
property or ``__getattr__`` of the person's never runs on the guard's account."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ipy_gpuguard.retry.fit_forecast import fit_batch_size
from ipy_gpuguard.retry.measure import samples_of
from ipy_gpuguard.retry.own_attributes import library_attribute, qualified_name
from ipy_gpuguard.retry.probe import is_one_shot


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


class Disguised(Recorded):
    """Data of the person's whose class says it is NumPy's."""

    __module__ = "numpy"
    __qualname__ = "ndarray"

    @property
    def shape(self):
        self.asked.append("shape")
        raise NotImplementedError("a stream has no shape")


def test_a_class_that_names_an_array_library_as_its_module_is_still_the_persons():
    data = Disguised()
    assert qualified_name(Disguised) == "numpy.ndarray"  # what it says of itself
    assert library_attribute(data, "shape") is None
    assert samples_of(data) is None
    assert data.asked == []


ASKED: list[str] = []


class NotedDict(dict):
    """The person's dict of inputs, whose ``values`` and ``__class__`` note each call."""

    def values(self):
        ASKED.append("values")
        return super().values()

    @property
    def __class__(self):
        ASKED.append("__class__")
        return dict


class NotedList(list):
    """The person's list of inputs, whose iteration and length note each call."""

    def __iter__(self):
        ASKED.append("__iter__")
        return super().__iter__()

    def __len__(self):
        ASKED.append("__len__")
        return super().__len__()


class NotedStream:
    """A stream of the person's whose ``__class__`` notes each read."""

    @property
    def __class__(self):
        ASKED.append("__class__")
        return NotedStream


def test_the_persons_containers_and_their_class_are_read_without_their_code():
    ASKED.clear()
    inputs = NotedDict(a=np.zeros(4), b=NotedList([np.zeros(4), np.zeros((4, 2))]))
    assert samples_of(inputs, NotedList([np.zeros(4)])) == 4
    assert samples_of(NotedDict(a=np.zeros(4), b=np.zeros(5))) is None
    assert is_one_shot(NotedStream()) is False
    assert is_one_shot(iter([1])) is True
    assert ASKED == []


class NotedModule(str):
    """A module name of the person's own ``str`` subclass, whose methods note each call."""

    def __getattribute__(self, name):
        ASKED.append(name)
        return super().__getattribute__(name)

    def __hash__(self):
        ASKED.append("__hash__")
        return super().__hash__()


class NotedSize(int):
    """A batch size of the person's ``int`` subclass whose conversion notes each call."""

    def __int__(self):
        ASKED.append("__int__")
        return 1

    def __index__(self):
        ASKED.append("__index__")
        return 1


class NotedIterator(Iterator):
    """An ``Iterator`` of the person's whose ``__subclasshook__`` notes each class asked."""

    @classmethod
    def __subclasshook__(cls, klass):
        ASKED.append("__subclasshook__")
        return NotImplemented

    def __next__(self):
        raise StopIteration


def test_no_hook_of_the_persons_classes_answers_what_the_guard_asks_of_a_fit():
    ASKED.clear()
    shape = property(lambda self: ASKED.append("shape"))
    stream = type("Stream", (), {"__module__": NotedModule("numpy"), "shape": shape})
    assert library_attribute(stream(), "shape") is None
    assert fit_batch_size({"x": np.zeros((100, 2)), "batch_size": NotedSize(16)}) == 16
    assert fit_batch_size({"x": np.zeros((100, 2)), "batch_size": np.int64(8)}) == 8
    assert is_one_shot(np.zeros(3)) is False
    assert is_one_shot(NotedIterator()) is True
    assert ASKED == []
