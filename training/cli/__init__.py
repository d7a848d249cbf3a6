"""What the commands share, on the commands floor with them.

The commands are the modules of `training/`'s top level (`python -m
training.NAME`) and tuning's two; `command_line` is what each of them
parses and starts with, and imports no Keras, so `--help` answers at once.
"""
