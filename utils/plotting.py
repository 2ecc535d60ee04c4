"""The book's figure style, in one place: text a reader can read at the size the page shows it.

A figure is drawn at about 7.5 in wide and shown at the text column's width (about 730 px on a desktop),
so 10 pt type shows at about 9 pt or more. `style(fig)` sets every text of a finished figure to at least
that and tidies the layout; chapters call it once before plt.show().
"""
from __future__ import annotations

MIN_POINTS = 10


def style(fig, min_points: float = MIN_POINTS):
    """Raise every text on the figure (titles, labels, ticks, legends, annotations) to min_points."""
    for text in fig.findobj(match=lambda a: hasattr(a, "get_fontsize") and hasattr(a, "set_fontsize")):
        if text.get_fontsize() < min_points:
            text.set_fontsize(min_points)
    fig.tight_layout()
    return fig
