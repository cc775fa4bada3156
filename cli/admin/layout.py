"""How a listing of `halfmq admin` fits the terminal: a table with every word whole, else one block per row.

A pipe, a CI log or an ssh session is often 80 columns wide. Rich shrinks a table that is too wide by
narrowing its widest columns, whatever their words, so at 80 columns "producer group" became
``prod/ucer/grou/p`` (issue 45). Here the width of each column is decided first (``column_widths``, a pure
function): every column at least as wide as its longest word, the room left shared out; when even that
does not fit, each row is printed as a block of "column  value" lines (psql's expanded display), its
values wrapped at spaces. A single word wider than the whole terminal (a long URL) is still folded,
never cut to "…".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

__all__ = ["Rows", "column_widths", "table_overhead"]

LABEL_GAP = 2  # spaces between a column's name and its value in a block


def table_overhead(columns: int) -> int:
    """The columns a rich table's rules and padding take besides its cells' text (a rule, one space each side, per column)."""
    return 3 * columns + 1


def column_widths(narrowest: Sequence[int], widest: Sequence[int], room: int) -> list[int] | None:
    """Each column's width in ``room`` cells of text: its widest when all fit; else its narrowest (its longest word)
    plus a share of what is left, in proportion to how much more it would use; None when not even the narrowest fit."""
    if sum(widest) <= room:
        return list(widest)
    spare = room - sum(narrowest)
    if spare < 0:
        return None
    wants = [w - n for n, w in zip(narrowest, widest, strict=True)]
    shares = [spare * want // sum(wants) for want in wants]
    left = spare - sum(shares)
    for i in sorted(range(len(wants)), key=lambda i: -wants[i]):  # what rounding left over, to the ones that want most
        if left == 0:
            break
        if shares[i] < wants[i]:
            shares[i] += 1
            left -= 1
    return [n + s for n, s in zip(narrowest, shares, strict=True)]


def _longest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(word) for word in text.split()), default=0)


class Rows:
    """A listing: ``columns`` named, ``rows`` of strings; a table when its columns fit the width, else one block per row.

    The first column (an id, a name) is never wrapped in a table: it is what an operator copies.
    """

    def __init__(self, title: str, columns: list[str], rows: list[list[str]]) -> None:
        self.title = title
        self.columns = columns
        self.rows = rows

    def _bounds(self) -> tuple[list[int], list[int]]:
        """Per column, the narrowest it may be (its longest word; the first column's longest cell) and the widest it would be."""
        from rich.cells import cell_len

        cells = [[name, *(row[i] for row in self.rows)] for i, name in enumerate(self.columns)]
        widest = [max(cell_len(c) for c in column) for column in cells]
        narrowest = [widest[0], *(max(_longest_word(c) for c in column) for column in cells[1:])]
        return narrowest, widest

    def table(self, widths: Sequence[int | None]) -> Any:
        from rich.table import Table

        t = Table(title=self.title)
        for i, (name, width) in enumerate(zip(self.columns, widths, strict=True)):
            t.add_column(name, no_wrap=i == 0, overflow="fold", width=width)
        for row in self.rows:
            t.add_row(*row)
        return t

    def records(self, width: int) -> Iterator[Any]:
        """The title, then per row each column's name and value side by side (values wrapped at spaces), a blank line between rows."""
        from rich.text import Text

        yield Text(self.title)
        if not self.rows:
            yield Text("(none)")
        label = max(len(name) for name in self.columns)
        room = max(width - label - LABEL_GAP, 8)
        for n, row in enumerate(self.rows):
            if n:
                yield Text("")
            for name, value in zip(self.columns, row, strict=True):
                for i, line in enumerate(Text(value).wrap(_measuring_console(), room, overflow="fold") or [Text("")]):
                    head = name.ljust(label) if i == 0 else " " * label
                    yield Text.assemble((head, "bold"), " " * LABEL_GAP, line)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        narrowest, widest = self._bounds()
        widths = column_widths(narrowest, widest, options.max_width - table_overhead(len(self.columns)))
        if widths is None:
            yield from self.records(options.max_width)
        else:
            yield self.table(widths)


def _measuring_console() -> Console:
    """A console for wrapping text only (``Text.wrap`` asks one for tab sizes and the like, never for output)."""
    from rich.console import Console

    return Console(width=10_000, color_system=None)
