"""Value classes for the modules a cold `check` imports, without the `dataclasses` module.

`dataclasses` imports `inspect`, and compiles each class's methods from
generated source when the class is made: for the sixteen classes `check`
loads that is about a third of its start-up. `record` gives a class the
same constructor (fields in order, defaults, `field(default_factory=...)`),
repr and equality (and, frozen, a hash and no assignment) from methods
shared by every record, so making one compiles nothing. Instances keep a
plain `__dict__`, so they pickle as before. Modules off the `check` path
keep `dataclasses`.
"""

from __future__ import annotations


class FrozenRecordError(AttributeError):
    """An assignment to a field of a frozen record."""


class field:  # noqa: N801 (named as dataclasses.field, whose place it takes)
    """A field's default made anew for each instance: `field(default_factory=list)`."""

    def __init__(self, *, default_factory):
        self.default_factory = default_factory


def record(cls=None, *, frozen: bool = False):
    """Decorator: `cls` gets __init__, __repr__, __eq__ (and, `frozen`, __hash__) over
    the fields its annotations name, in order; a class attribute is a field's default."""
    def make(cls):
        names = tuple(cls.__dict__.get("__annotations__", {}))   # (a record inherits no fields)
        defaults = {}
        for name in names:
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
                if isinstance(defaults[name], field):
                    delattr(cls, name)   # (as dataclasses: the class attribute is no default)
        cls.__record_fields__ = names
        cls.__record_defaults__ = defaults
        cls.__init__ = _init
        cls.__repr__ = _repr
        cls.__eq__ = _eq
        cls.__match_args__ = names
        if frozen:
            cls.__hash__ = _hash
            cls.__setattr__ = _frozen
            cls.__delattr__ = _frozen
        else:
            cls.__hash__ = None   # (mutable and compared by value: unhashable, as a dataclass)
        return cls
    return make if cls is None else make(cls)


def _init(self, *args, **kwargs) -> None:
    names = type(self).__record_fields__
    if len(args) > len(names):
        raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments, {len(args)} given")
    values = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names or name in values:
            raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {name!r}")
        values[name] = value
    defaults = type(self).__record_defaults__
    for name in names:
        if name not in values:
            if name not in defaults:
                raise TypeError(f"{type(self).__name__}() missing argument {name!r}")
            default = defaults[name]
            values[name] = default.default_factory() if isinstance(default, field) else default
    self.__dict__.update(values)


def _values(self) -> tuple:
    return tuple(self.__dict__[name] for name in type(self).__record_fields__)


def _repr(self) -> str:
    inside = ", ".join(f"{name}={self.__dict__[name]!r}" for name in type(self).__record_fields__)
    return f"{type(self).__qualname__}({inside})"


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self) -> int:
    return hash(_values(self))


def _frozen(self, name, *value) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def replace(obj, **changes):
    """A copy of the record `obj` with `changes` (as dataclasses.replace)."""
    return type(obj)(**{**as_dict(obj), **changes})


def as_dict(obj) -> dict:
    """The fields of the record `obj` and their values, in order (values are not copied)."""
    return {name: obj.__dict__[name] for name in type(obj).__record_fields__}
