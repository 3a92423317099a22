"""The JSON result file: what a run leaves for a later one, and how a later one reads it back.

- json_file.py: the document written (one run, or several) and parsed back strictly, its secrets
  redacted, each run judged again from its calls; runs from several files labelled for `merge`.
- checks.py: what a file may hold, beyond what is derived again from its calls.
- loading.py: a file named by an option read from disk (`--baseline`, `merge`), and a baseline
  matched to the targets.
- history_folder/: the history folder (`--history`) read before the run and appended to after it.

Import the module you need: this package re-exports nothing, so that the CLI's probe loads the
history folder's code only when it needs it (`--history`, or once its calls are made).
"""
