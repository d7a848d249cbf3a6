"""Trained models that ship with the zoo (`zoo/presets/NAME/`) and their cards."""

from zoo.presets.loading import (
    Preset,
    available,
    load_preset,
    preset_card,
    preset_dir,
)

__all__ = ["Preset", "available", "load_preset", "preset_card", "preset_dir"]
