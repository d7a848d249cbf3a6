"""Trained models that ship with the zoo (`zoo/presets/NAME/`) and their one loader."""

from zoo.presets.preset_loader import (
    Preset,
    PresetLoader,
    available,
    from_preset,
    load_weights,
    preset_card,
    preset_dir,
    save_preset,
)

__all__ = [
    "Preset",
    "PresetLoader",
    "available",
    "from_preset",
    "load_weights",
    "preset_card",
    "preset_dir",
    "save_preset",
]
