"""An admin listing's columns: as wide as they want when they fit, else each at least its longest word with the room
left shared out, else (None) one block per row."""

from __future__ import annotations

import io

from rich.console import Console

from cli.admin.layout import Rows, column_widths, table_overhead


def test_columns_that_fit_are_as_wide_as_their_longest_cell() -> None:
    assert column_widths([4, 3], [10, 20], 30) == [10, 20]


def test_columns_that_do_not_fit_get_their_longest_word_and_share_the_rest_by_what_they_would_use() -> None:
    widths = column_widths([4, 3, 5], [10, 33, 5], 27)
    assert widths is not None and sum(widths) == 27
    assert widths[0] >= 4 and widths[1] >= 3 and widths[2] == 5 and widths[1] > widths[0]


def test_when_not_even_the_longest_words_fit_there_is_no_table() -> None:
    assert column_widths([40, 41], [40, 60], 80) is None


def test_a_rich_table_takes_three_cells_per_column_and_one_besides() -> None:
    for columns in (1, 2, 7):
        console = Console(record=True, width=200, color_system=None, file=io.StringIO())
        console.print(Rows("t", [f"c{i}" for i in range(columns)], [["x" * 5] * columns]))
        widest = max(len(line) for line in console.export_text().splitlines())
        assert widest == columns * 5 + table_overhead(columns)
