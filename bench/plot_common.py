"""What the bench plots share: a headless matplotlib, one figure size, and the same finish (labels,
title, legend, grid, 110 dpi PNG). Imported by bench/plot_*.py, which run as scripts from any
directory (their folder is on sys.path). Needs matplotlib, which aiter_lite itself does not use."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def new_axes():
    """A figure and its axes, sized for docs/."""
    return plt.subplots(figsize=(8, 4.5))


def finish(fig, ax, dst: str, *, xlabel: str, ylabel: str, title: str) -> None:
    """Labels, legend and grid, then the PNG at dst."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
