"""Looking inside trained models: the papers' analyses as library functions.

One module per analysis, each returning numbers and drawing its figure with
`training.core.plots` (per-token losses with the state carried come from
`training.core.scoring`); `python -m training.analyze` and `python -m training.syntax`
run them on run directories.

- `surprisal`: loss right after surprising inputs (Krause et al. 2016, 4.2).
- `pabs`: principal angles between transition matrices (second-order report).
- `routing`: which cell or choice matrix each token used.
- `stack`: a stack recognizer's push/pop/no-op per step.
- `ldpa`: accuracy against closing distance on Dyck.
- `curves`: a column of the per-epoch log against the epoch (Figure 3 of
  the second-order report: validation WCPA), of runs or records.
- `targeted_syntax`: targeted syntactic evaluation on minimal pairs.
- `dynamic`: dynamic evaluation (Krause et al. 2017).

Each of the first six has an `analyze_*` function that runs it on run
directories and writes its figure and numbers to a folder, and a
`report_lines` of what `python -m training.analyze` prints; `analyze` runs
one by its name in `ANALYSES`. A module is imported when its analysis runs,
so `curves`, which reads no model, never loads Keras.
"""

# The analyses of `python -m training.analyze`, by name.
ANALYSES = ("surprisal", "pabs", "routing", "stack", "ldpa", "curves")


def analyze(
    what,
    run_dirs,
    out,
    split="test",
    texts=(),
    samples=4,
    fraction=0.1,
    column="val_wcpa",
    init=False,
    across=False,
):
    """Runs the analysis `what` of `ANALYSES` on `run_dirs` into the folder
    `out`; returns the lines that report it.

    `split`, `texts` and `samples` choose the strings of `surprisal`,
    `routing`, `stack` and `ldpa`; `fraction` is `surprisal`'s, `column`
    `curves'`, and `init` and `across` are `pabs`'s. `out` is checked first
    and made once the runs have passed their checks.
    """
    from training.core import plots

    plots.check_out_dir(out)
    if what == "surprisal":
        from training.analysis import surprisal

        result = surprisal.analyze_surprisal(run_dirs, out, split, fraction)
        return surprisal.report_lines(result)
    if what == "pabs":
        from training.analysis import pabs

        return pabs.report_lines(pabs.analyze_pabs(run_dirs, out, init, across))
    if what == "routing":
        from training.analysis import routing

        routing.analyze_routing(run_dirs, out, split, texts, samples)
        return []
    if what == "stack":
        from training.analysis import stack_actions

        results = stack_actions.analyze_stack(run_dirs, out, split, texts, samples)
        return stack_actions.report_lines(results, split)
    if what == "ldpa":
        from training.analysis import ldpa

        return ldpa.report_lines(ldpa.analyze_ldpa(run_dirs, out, split))
    if what == "curves":
        from training.analysis import curves

        found, lacking = curves.analyze_curves(run_dirs, out, column)
        return curves.report_lines(found, lacking, column)
    raise ValueError(
        f"Unknown analysis {what!r}; expected one of: {', '.join(ANALYSES)}."
    )
