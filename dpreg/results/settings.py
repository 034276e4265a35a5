"""The public settings of a fit: records that render their own rows.

Each :class:`Setting` has a name to read it by (``"clip"``, ``"noise_std"``), the label
the summary shows (``"noise_std (lambda)"``) and its value. :class:`Settings` keeps them
in the summary's order; as a mapping it is ``label -> value`` (what the summary prints),
and :meth:`Settings.value` reads a setting by its name, whatever its label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

__all__ = ["Setting", "Settings"]


@dataclass(frozen=True)
class Setting:
    """One public setting of a fit.

    Attributes
    ----------
    name : str
        What code reads it by.
    label : str
        Its row's label in the summary.
    value : object
        A number or a short text.
    """

    name: str
    label: str
    value: Any


class Settings(Mapping):
    """The public settings of a fit, in the summary's order.

    Parameters
    ----------
    rows : iterable of Setting
        One record per setting; names and labels are unique.

    Notes
    -----
    As a mapping, keys are the summary's labels. Read a setting by its name with
    :meth:`value`: labels are for people and may change.
    """

    def __init__(self, rows=()):
        self._rows = tuple(rows)
        self._by_label = {r.label: r for r in self._rows}
        self._by_name = {r.name: r for r in self._rows}
        if len(self._by_label) != len(self._rows) or len(self._by_name) != len(self._rows):
            raise ValueError("setting names and labels must be unique")

    @classmethod
    def from_values(cls, values: Mapping[str, Any],
                    labels: Mapping[str, str] | None = None) -> "Settings":
        """Settings from ``{name: value}``, labelled by ``labels[name]`` or the name.

        Parameters
        ----------
        values : mapping
            ``{name: value}`` in the summary's order.
        labels : mapping, optional
            Summary labels that differ from the names.

        Returns
        -------
        Settings
            The records.
        """
        labels = labels or {}
        return cls(Setting(k, labels.get(k, k), v) for k, v in values.items())

    def value(self, name: str) -> Any:
        """The value of the setting called ``name``.

        Parameters
        ----------
        name : str
            Its name (not its label), e.g. ``"clip"`` or ``"noise_std"``.

        Returns
        -------
        object
            The value.
        """
        try:
            return self._by_name[name].value
        except KeyError:
            raise KeyError(f"no setting named {name!r}; names are "
                           f"{list(self._by_name)}") from None

    def with_setting(self, name: str, value: Any, label: str | None = None) -> "Settings":
        """A copy with the setting ``name`` set to ``value`` (appended if new).

        Parameters
        ----------
        name : str
            Its name.
        value : object
            Its value.
        label : str, optional
            Its summary label (default: the name, or the existing label).

        Returns
        -------
        Settings
            The new records.
        """
        old = self._by_name.get(name)
        new = Setting(name, label or (old.label if old else name), value)
        if old is None:
            return Settings((*self._rows, new))
        return Settings(new if r.name == name else r for r in self._rows)

    def rows(self) -> list[tuple[str, Any]]:
        """``(label, value)`` per setting, in order (the summary's rows).

        Returns
        -------
        list of tuple
            The rows.
        """
        return [(r.label, r.value) for r in self._rows]

    def __getitem__(self, label: str) -> Any:
        return self._by_label[label].value

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_label)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"Settings({dict(self.rows())!r})"
