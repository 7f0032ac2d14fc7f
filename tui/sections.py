"""A sidebar section: an option list that refreshes without reloading unchanged rows."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from canopy.tui.rows import Listing, Row


class Section(OptionList):
    """One sidebar list (Backlog, Queues, Graphs or Sessions).

    :meth:`show` is called about once a second. When the same items are there in the
    same order, only the lines that changed are redrawn; otherwise the list is rebuilt
    and the highlight stays on the item it was on.
    """

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self.shown: list[Row] = []
        self.hidden = 0

    def show(self, listing: Listing) -> None:
        """Make the list show the rows of ``listing`` and how many more it left out."""
        new_rows, hidden = listing.rows, listing.total - len(listing.rows)
        if [i for i, _ in new_rows] == [i for i, _ in self.shown] and hidden == self.hidden:
            for index, ((_, old), (_, new)) in enumerate(zip(self.shown, new_rows, strict=True)):
                if old != new:
                    self.replace_option_prompt_at_index(index, new)
            self.shown = new_rows
            return
        highlighted = self.highlighted_option.id if self.highlighted_option else None
        options = [Option(line, id=item_id) for item_id, line in new_rows]
        if hidden:
            more = Text(f"… {hidden} more: / filters", style="dim italic")
            options.append(Option(more, disabled=True))
        self.set_options(options)
        self.shown, self.hidden = new_rows, hidden
        ids = [item_id for item_id, _ in new_rows]
        if highlighted in ids:
            self.highlighted = ids.index(highlighted)

    def item_ids(self) -> list[str]:
        """The ids shown, in order (what tests read)."""
        return [item_id for item_id, _ in self.shown]
