"""statsmodels' ``Summary`` with rule lines as wide as the table they frame.

``statsmodels.iolib.summary2.Summary.as_text`` measures each table by its first line,
so with tables of different column counts the ``=`` and ``-`` rules come out a few
characters shorter or longer than the rows. :class:`Summary` redraws every rule at the
width of the widest row and centres the title on it; LaTeX and HTML are unchanged.
"""

from __future__ import annotations

from statsmodels.iolib.summary2 import Summary as _StatsmodelsSummary

__all__ = ["Summary"]


def _is_rule(line: str) -> bool:
    s = line.strip()
    return bool(s) and set(s) <= {"=", "-"} and len(s) == len(line.rstrip())


class Summary(_StatsmodelsSummary):
    """A statsmodels ``Summary`` whose text rules match the table width."""

    def as_text(self) -> str:
        text = super().as_text()
        lines = text.split("\n")
        n_tables = [i for i, line in enumerate(lines) if _is_rule(line)]
        if not n_tables:
            return text
        first, last = n_tables[0], n_tables[-1]
        body = [line.rstrip() for line in lines[first:last + 1] if not _is_rule(line)]
        width = max([len(line) for line in body] + [1])
        out = []
        for i, line in enumerate(lines):
            if _is_rule(line):
                out.append(line.strip()[0] * width)
            elif i < first and line.strip() and self.title and line.strip() == self.title:
                out.append(self.title.center(width).rstrip())
            else:
                out.append(line)
        return "\n".join(out)
