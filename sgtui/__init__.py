"""sgtui: launch, watch and fix SGLang servers on your own GPU hosts over SSH."""

__version__ = "0.1.0"
