"""The tutorial's figures, drawn with matplotlib (imported only when a plot
is made, so cuatomic works without it)."""
import string

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("cuatomic.plots needs matplotlib: pip install matplotlib") from e
    return plt


def letter_histogram(counts, *, kind="count", title=None):
    """Letter frequencies in two panels, lowercase and uppercase.

    Parameters
    ----------
    counts : array_like
        A 128-bin histogram of ASCII codes (``histogram(text, bins=128,
        range=(0, 128))[0]``), on the host or the device.
    kind : {"count", "probability", "percent"}, optional
        Raw counts, or each letter's share of all characters.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    counts = counts.copy_to_host() if hasattr(counts, "copy_to_host") else np.asarray(counts)
    if counts.shape != (128,):
        raise ValueError("counts must be a 128-bin ASCII histogram")
    scale = {"count": 1.0, "probability": 1.0 / counts.sum(), "percent": 100.0 / counts.sum()}
    if kind not in scale:
        raise ValueError("kind must be 'count', 'probability' or 'percent'")
    ylabel = {"count": "Count", "probability": "Probability", "percent": "Percent (%)"}[kind]
    fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharey=False)
    for ax, letters in zip(axes, (string.ascii_lowercase, string.ascii_uppercase)):
        values = counts[[ord(c) for c in letters]] * scale[kind]
        ax.bar(list(letters), values, color="tab:blue" if letters.islower() else "tab:orange")
        ax.set_ylabel(ylabel)
    axes[0].set_title(title or "Letter frequencies")
    fig.tight_layout()
    return fig


def speedup_chart(times_ms, reference, *, title=None):
    """Bars of how many times slower each version is than `reference`.

    Parameters
    ----------
    times_ms : dict of str to float
        Version name -> time (ms).
    reference : str
        The key everything is compared with (its bar is 1x).
    title : str, optional
        Default: "Performance relative to <reference>", naming what ran
        (the GPU kernel, or the cpu backend's rung).

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    if reference not in times_ms:
        raise ValueError(f"reference {reference!r} is not among {list(times_ms)}")
    names = list(times_ms)
    ratios = [times_ms[n] / times_ms[reference] for n in names]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(names)), 4))
    bars = ax.bar(names, ratios, color=["tab:green" if n == reference else "tab:gray" for n in names])
    for bar, r in zip(bars, ratios):
        label = f"{r:.0f}x" if r >= 10 else (f"{r:.1f}x" if r >= 1 else f"{r:.2f}x")
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom")
    if len(names) > 3:  # long version names side by side overlap: slant them
        ax.tick_params(axis="x", labelrotation=25)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    ax.set_ylabel(f"Times slower than {reference}")
    ax.set_title(title or f"Performance relative to {reference}")
    top, low = max(ratios), max(min(ratios), 1e-12)
    if top / low > 100:
        ax.set_yscale("log")
        ax.set_ylim(low / 2, top * 3)  # room above the tallest bar for its label
    else:
        ax.set_ylim(0, top * 1.15)
    fig.tight_layout()
    return fig


def sweep_plot(rows, *, title="Time vs blocks per grid"):
    """The block-count sweep: time against blocks, every method on one time
    axis, a dashed vertical line at each method's fastest count.

    One axis shows the gap between the methods as it is (two axes with
    scales of their own would draw curves 5x apart on top of each other):
    linear from 0 when the times are within a factor of 10 of each other,
    logarithmic when they span more.

    Parameters
    ----------
    rows : list of SweepRow
        From :func:`cuatomic.sweep`.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    methods = list(dict.fromkeys(r.method for r in rows))
    if not methods:
        raise ValueError("sweep_plot needs at least one row")
    fig, ax = plt.subplots(figsize=(10, 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, method in enumerate(methods):
        color = colors[i % len(colors)]
        mine = sorted((r for r in rows if r.method == method), key=lambda r: r.blocks)
        blocks = [r.blocks for r in mine]
        ms = [r.median_ms for r in mine]
        ax.plot(blocks, ms, color=color, marker="o", markersize=3, label=method)
        best = mine[int(np.argmin(ms))]
        ax.axvline(best.blocks, color=color, linestyle="--", alpha=0.7)
        ax.annotate(f"{best.blocks}", (best.blocks, best.median_ms), color=color, xytext=(4, 4),
                    textcoords="offset points")
    times = [r.median_ms for r in rows]
    if max(times) > 10 * min(times):
        from matplotlib.ticker import FormatStrFormatter, LogLocator
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(LogLocator(subs=(2, 3, 5)))
        for which in ("major", "minor"):  # 0.3, 3 rather than 3 x 10^-1, 3 x 10^0
            getattr(ax.yaxis, f"set_{which}_formatter")(FormatStrFormatter("%g"))
    else:
        ax.set_ylim(0, 1.1 * max(times))
    ax.set_ylabel("Time (ms)")
    ax.legend()
    counts = sorted({r.blocks for r in rows})
    if len(counts) > 2 and all(b >= 1.5 * a for a, b in zip(counts, counts[1:])):
        ax.set_xscale("log", base=2)  # counts by doubling (the cpu sweep): even steps on a log axis
    ax.set_xlabel("Blocks per grid")
    ax.set_title(title)
    fig.tight_layout()
    return fig
