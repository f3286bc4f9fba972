"""Standard figures from a results DataFrame (one row per run).

>>> from tessera import figures, results
>>> df = results.load("tessera-results/store.sqlite", sweep="page-sizes")    # doctest: +SKIP
>>> fig = figures.bars(df, "walker.walk_cycle_share", hue="physmem.page_size",
...                    baseline="base_only")                                 # doctest: +SKIP
>>> figures.save(fig, "page-sizes", formats=("png", "svg"))                  # doctest: +SKIP

- :func:`bars`: grouped bars per workload (or any column), one bar per hue
  value, and a geometric-mean group.
- :func:`lines`: a stat over a swept axis, one line per hue value.
- :func:`montecarlo_lines`, :func:`thresholds`: the GTSM Monte Carlo
  figures (estimates with 95 % bands beside closed forms; Table 2 as bars).
- :func:`save`: PNG, SVG or PDF, atomic and byte-identical for the same data.
- :func:`resolve_column`: how the views find a column from a short name.

The views are pure functions of the DataFrame: they never read the store,
never use pyplot and need no display. Each returns a
``matplotlib.figure.Figure``; notes the figure carries under its x axis (such
as values left out of a geometric mean) are also in ``fig.tessera_notes``.
See docs/figures.md.
"""

from tessera.figures._common import AGGS, ERRORBARS, resolve_column
from tessera.figures._bars import bars
from tessera.figures._lines import lines
from tessera.figures._montecarlo import montecarlo_lines, thresholds
from tessera.figures._save import FORMATS, save

__all__ = ["bars", "lines", "montecarlo_lines", "thresholds", "save", "resolve_column", "FORMATS", "AGGS", "ERRORBARS"]
