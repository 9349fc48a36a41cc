"""``gpusvd bench``'s report: the table it prints and the plot it draws (time and accuracy
against n, one line per method)."""


# The accuracy columns of each algorithm; the first is plotted.
METRICS = {"svd": ("residual", "orthogonality", "sv_error"), "svdvals": ("sv_error",),
           "jacobi": ("residual", "orthogonality", "sv_error"),
           "takagi": ("residual", "orthogonality"), "lowrank": ("error", "rank")}
UNITS = {"residual": "residual (units of n eps)", "orthogonality": "orthogonality (n eps)",
         "sv_error": "sv error (units of s_max eps)", "error": "squared relative error",
         "rank": "rank"}


def figure(result):
    """The figure of :func:`plot`: time and accuracy against n, one line per method. Each
    y axis is labelled at 1, 2 and 5 times the powers of ten, so a range narrower than a
    decade still reads."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogFormatter, LogLocator

    key = METRICS[result["algorithm"]][0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(r["method"] for r in result["records"]):
        rows = [r for r in result["records"] if r["method"] == name and "seconds" in r]
        sizes = [r["n"] for r in rows]
        left.plot(sizes, [r["seconds"] for r in rows], "o-", label=name)
        # As measured: an exact zero has no place on the log axis and is left out (the
        # table shows it).
        right.plot(sizes, [r[key] for r in rows], "o-", label=name)
    unit = UNITS[key]
    for axes, label in ((left, "median time (s)"), (right, unit)):
        axes.set(xscale="log", yscale="log", xlabel="n", ylabel=label)
        axes.set_xticks(result["sizes"], [str(n) for n in result["sizes"]])
        axes.minorticks_off()
        axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    left.legend()
    gpu = ", ".join(g["name"] for g in result["machine"]["gpus"]) or "CPU only"
    fig.suptitle(f"gpusvd bench {result['algorithm']} {result['dtype']} ({gpu})")
    fig.tight_layout()
    return fig


def plot(result, path):
    """Save :func:`figure` to ``path``; False without matplotlib."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = figure(result)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def table(result):
    keys = METRICS[result["algorithm"]]
    print(f"{'n':>6}  {'method':<16} {'where':<5} {'median s':>10}"
          + "".join(f" {k:>13}" for k in keys))
    for r in result["records"]:
        head = f"{r['n']:>6}  {r['method']:<16} {r['where']:<5}"
        if "failed" in r:
            print(f"{head} failed: {r['failed']}")
        else:
            print(f"{head} {r['seconds']:>10.4g}" + "".join(f" {r[k]:>13.3g}" for k in keys))
    print("; ".join(UNITS[k] for k in keys))
