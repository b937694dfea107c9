"""A simulated GPU host: an SSH server on 127.0.0.1 with fake nvidia-smi, pct and an SGLang stand-in."""
