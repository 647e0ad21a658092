"""Names the emit stage chooses for what the model made: a builder module's class,
a layer's instance, the list of a loop's layers. Kept here, not on the model's
nodes: the model is read-only once emitting starts."""

from __future__ import annotations

from dataclasses import dataclass, field

from tf1gradfix.model.nodes import BuilderModule, Layer
from tf1gradfix.model.parts import LayerSite, VariableSite


@dataclass
class Naming:
    classes: dict[BuilderModule, str] = field(default_factory=dict)   # builder module -> its `tf.Module` class
    layers: dict[Layer | LayerSite, str] = field(default_factory=dict)   # a layer (or a loop's call site) -> its instance
    lists: dict[LayerSite | VariableSite, str] = field(default_factory=dict)   # a loop's call site -> the list it fills
    helpers: dict[str, str] = field(default_factory=dict)   # a class of rules/helpers.toml -> its name in the module
