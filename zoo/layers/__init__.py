"""Non-recurrent pieces of the zoo's models (readouts, memories, heads)."""

from zoo.layers.dyck_readout import DyckReadout

__all__ = ["DyckReadout"]
