"""The classes of one kind (kernels, losses) by the names they declare: a stable name, the one
okoco files hold, and a command-line name. Each table okoco keeps of its kernels and losses (the
names a file may hold, the command line's names) is read from here, so that a class declares
its names once, in its own ``class`` statement (``okoco.kernels.Kernel``,
``okoco.losses.Loss``)."""

from __future__ import annotations


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class Registry:
    """The classes of one kind that declared a stable name or a command-line name.

    A name belongs to one class: declaring it for another is a ``TypeError`` (and registers
    nothing), except for a class of the same module and name (a module imported again).

    Examples
    --------
    >>> registry = Registry("kernel")
    >>> class Tent:
    ...     pass
    >>> registry.add(Tent, name="Tent", cli_name="tent")
    >>> registry.by_name(), registry.name_of(Tent), registry.by_cli_name()["tent"] is Tent
    ({'Tent': <class '...Tent'>}, 'Tent', True)
    >>> registry.add(int, name="Tent")
    Traceback (most recent call last):
    ...
    TypeError: the kernel name 'Tent' is ...Tent's already; choose another for builtins.int
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._by_name: dict[str, type] = {}
        self._by_cli: dict[str, type] = {}

    def add(self, cls: type, name: str | None = None, cli_name: str | None = None) -> None:
        """Register ``cls`` under its stable ``name`` and its ``cli_name`` (either may be
        ``None``: not saved, or not on the command line)."""
        claims = [(table, key) for table, key in ((self._by_name, name), (self._by_cli, cli_name))
                  if key is not None]
        for table, key in claims:
            if not isinstance(key, str) or not key.strip():
                raise TypeError(f"{_path(cls)}: a {self.kind} name is a non-empty string, "
                                f"got {key!r}")
            other = table.get(key)
            if other is not None and _path(other) != _path(cls):
                raise TypeError(f"the {self.kind} name {key!r} is {_path(other)}'s already; "
                                f"choose another for {_path(cls)}")
        for table, key in claims:
            table[key] = cls

    def by_name(self) -> dict[str, type]:
        """Stable name -> class, in the order of registration."""
        return dict(self._by_name)

    def by_cli_name(self) -> dict[str, type]:
        """Command-line name -> class, in the order of registration."""
        return dict(self._by_cli)

    def name_of(self, cls: type) -> str | None:
        """The stable name of exactly ``cls`` (not of a subclass), or ``None``."""
        for name, registered in self._by_name.items():
            if registered is cls:
                return name
        return None
