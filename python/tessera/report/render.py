"""A report as a list of blocks, written out as Markdown and as HTML.

One model, two writers, so ``report.md`` and ``report.html`` always hold the
same text and the same numbers. Inline text may use ``**bold**``, ``*italic*``,
```code``` and ``[text](link)``; both writers understand exactly these.
"""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Optional, Sequence, Union

__all__ = ["Heading", "Para", "Bullets", "Table", "Figure", "Code", "Block", "to_markdown", "to_html"]


@dataclasses.dataclass
class Heading:
    level: int
    text: str


@dataclasses.dataclass
class Para:
    text: str


@dataclasses.dataclass
class Bullets:
    items: Sequence[str]


@dataclasses.dataclass
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    caption: Optional[str] = None
    #: Right-align columns whose cells are all numbers (or "—"); the first column never is.
    numeric: bool = True

    def numeric_columns(self) -> list[bool]:
        def is_num(cell: str) -> bool:
            if cell == "—":
                return True
            try:
                float(cell)
            except ValueError:
                return False
            return True

        return [
            self.numeric and i > 0 and all(is_num(str(row[i])) for row in self.rows)
            for i in range(len(self.columns))
        ]


@dataclasses.dataclass
class Figure:
    #: Path of the figure without suffix, relative to the report (``figures/fig1``).
    stem: str
    caption: str


@dataclasses.dataclass
class Code:
    text: str
    lang: str = ""


Block = Union[Heading, Para, Bullets, Table, Figure, Code]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: Sequence[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            lines = []
            if b.caption:
                lines.append(b.caption)
                lines.append("")
            lines.append("| " + " | ".join(_md_cell(c) for c in b.columns) + " |")
            align = ["---:" if num else "---" for num in b.numeric_columns()]
            lines.append("|" + "|".join(align) + "|")
            for row in b.rows:
                lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            out.append("\n".join(lines))
        elif isinstance(b, Figure):
            out.append(f"![{b.caption}]({b.stem}.png)\n\n*{b.caption}* ([SVG]({b.stem}.svg))")
        elif isinstance(b, Code):
            out.append(f"```{b.lang}\n{b.text.rstrip()}\n```")
        else:  # pragma: no cover - the Block union is closed
            raise TypeError(f"not a report block: {b!r}")
    return "\n\n".join(out) + "\n"


_INLINE = re.compile(r"(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*|\[[^\]]+\]\([^)]+\))")


def _inline(text: str) -> str:
    parts = []
    for piece in _INLINE.split(str(text)):
        if not piece:
            continue
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            parts.append(f"<code>{html.escape(piece[1:-1])}</code>")
        elif piece.startswith("**") and piece.endswith("**") and len(piece) > 4:
            parts.append(f"<strong>{_inline(piece[2:-2])}</strong>")
        elif piece.startswith("*") and piece.endswith("*") and len(piece) > 2:
            parts.append(f"<em>{_inline(piece[1:-1])}</em>")
        elif piece.startswith("[") and piece.endswith(")") and "](" in piece:
            label, href = piece[1:-1].split("](", 1)
            parts.append(f'<a href="{html.escape(href, quote=True)}">{_inline(label)}</a>')
        else:
            parts.append(html.escape(piece))
    return "".join(parts)


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: 0.3em; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
""".strip()


def to_html(blocks: Sequence[Block], title: str) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
    ]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f'<h{b.level} id="{_slug(b.text)}">{_inline(b.text)}</h{b.level}>')
        elif isinstance(b, Para):
            out.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            rows = ["<table>"]
            if b.caption:
                rows.append(f"<caption>{_inline(b.caption)}</caption>")
            rows.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in b.columns) + "</tr>")
            nums = b.numeric_columns()
            for row in b.rows:
                cells = []
                for i, c in enumerate(row):
                    cls = ' class="num"' if nums[i] else ""
                    cells.append(f"<td{cls}>{_inline(c)}</td>")
                rows.append("<tr>" + "".join(cells) + "</tr>")
            rows.append("</table>")
            out.append("\n".join(rows))
        elif isinstance(b, Figure):
            out.append(
                f'<figure><img src="{html.escape(b.stem)}.svg" alt="{html.escape(b.caption, quote=True)}">'
                f"<figcaption>{_inline(b.caption)} (<a href=\"{html.escape(b.stem)}.png\">PNG</a>)"
                "</figcaption></figure>"
            )
        elif isinstance(b, Code):
            out.append(f"<pre><code>{html.escape(b.text.rstrip())}</code></pre>")
        else:  # pragma: no cover
            raise TypeError(f"not a report block: {b!r}")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
