"""Harbor's installed agent for `recursive`: `harbor run -a recursive_harbor:RecursiveAgent`."""

from .agent import RecursiveAgent, RecursiveOptions

__all__ = ["RecursiveAgent", "RecursiveOptions"]
