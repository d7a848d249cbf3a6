"""Looking inside trained models: the papers' analyses as library functions.

One module per analysis, each returning numbers and drawing its figure with
`training.plots` (per-token losses with the state carried come from
`training.scoring`); `python -m training.analyze` and `python -m training.syntax`
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
"""
